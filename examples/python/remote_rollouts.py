"""Rollouts over HTTP: a few RL workers append trajectories to one rollout store of a
`strata serve`, then a learner reads them back — by trajectory, by filter, and with blobs.

    strata serve --data-dir ./strata-data --port 3000 &
    PYTHONPATH=python python3 examples/python/remote_rollouts.py http://127.0.0.1:3000

The store name is the second argument (default "example-rollouts").
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from strata.aio import AsyncRolloutStore
from strata.remote import RemoteRolloutStore


def worker(store: RemoteRolloutStore, worker_id: int) -> list[str]:
    """One generation worker: three turns of one trajectory, the last with a trace blob."""
    rollout_id = f"traj-{worker_id}"
    turns = [
        {"rollout_id": rollout_id, "problem_id": f"problem-{worker_id % 2}",
         "sequence_order": turn, "role": "assistant", "content": f"turn {turn}",
         "reward": float(turn) / 2, "policy_version": "ckpt-1",
         "output_logprobs": [-0.1 * turn, -0.2]}
        for turn in range(2)
    ]
    turns.append({"rollout_id": rollout_id, "sequence_order": 2, "role": "artifact",
                  "content_type": "application/octet-stream", "artifact_type": "trace",
                  "binary_payload": f"trace of worker {worker_id}".encode()})
    return store.add(turns)["ids"]  # ids are generated: none were given


async def learner(base_url: str, name: str) -> None:
    """Reads from an event loop: the same calls as coroutines."""
    store = await AsyncRolloutStore.connect(base_url, name)
    rewarded = await store.list(filters={"policy_version": "ckpt-1", "problem_id": "problem-0"})
    print(f"learner: {len(rewarded)} rows of problem-0 under ckpt-1")
    for row in await store.get_trajectory("traj-0"):
        print(f"  traj-0 #{row['sequence_order']} {row['role']}: {row['content']!r}")
    await store.aclose()


def main() -> None:
    base_url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:3000"
    name = sys.argv[2] if len(sys.argv) > 2 else "example-rollouts"
    store = RemoteRolloutStore.connect_or_create(base_url, name)
    # One handle shared by four threads.
    with ThreadPoolExecutor(4) as pool:
        ids = [i for batch in pool.map(lambda w: worker(store, w), range(4)) for i in batch]
    print(f"workers: appended {len(ids)} rows")

    artifacts = store.list(filters={"role": "artifact"})
    blobs = sorted(store.get_blob(row["id"]).decode() for row in artifacts)
    print(f"blobs: {blobs}")
    asyncio.run(learner(base_url, name))
    store.close()


if __name__ == "__main__":
    main()
