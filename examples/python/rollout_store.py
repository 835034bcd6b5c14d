"""Rollouts of an RL run in a strata RolloutStore: add turns, make them visible, read a
trajectory back, filter, and fetch an artifact's bytes.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/rollout_store.py [DIR]

DIR is where the store goes (default: a new temporary directory).
"""

import sys
import tempfile

import numpy as np

import strata


def main(directory: str) -> None:
    with strata.RolloutStore.open(f"{directory}/rollouts") as store:
        # One trajectory: two assistant turns, a tool call and a grade. Records without an
        # `id` get a generated one; logprobs may be numpy arrays.
        result = store.add(
            [
                {"rollout_id": "traj-1", "problem_id": "gsm8k-17", "sequence_order": 0,
                 "role": "assistant", "content": "Let me compute 17 * 3.",
                 "output_logprobs": np.array([-0.1, -0.02, -0.3], dtype=np.float32),
                 "policy_version": "ckpt-7"},
                {"rollout_id": "traj-1", "problem_id": "gsm8k-17", "sequence_order": 1,
                 "role": "tool", "content": "51", "policy_version": "ckpt-7"},
                {"rollout_id": "traj-1", "problem_id": "gsm8k-17", "sequence_order": 2,
                 "role": "assistant", "content": "The answer is 51.", "reward": 1.0,
                 "include_in_training": True, "policy_version": "ckpt-7",
                 "metadata": {"temperature": 0.7}},
                {"rollout_id": "traj-1", "problem_id": "gsm8k-17", "sequence_order": 3,
                 "role": "grade", "score": 1.0, "grader_id": "exact-match",
                 "policy_version": "ckpt-7"},
            ]
        )
        print(f"added {result['count']} turns")
        # A screenshot artifact: its bytes are stored inline and read only on request.
        png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
        store.add_one(id="traj-1-shot", rollout_id="traj-1", sequence_order=4, role="artifact",
                      content_type="image/png", artifact_type="screenshot",
                      binary_payload=png, payload_size=len(png))

        # Adds are durable at once and visible after a flush.
        store.flush()

        for turn in store.get_trajectory("traj-1"):
            print(f"  {turn['sequence_order']} {turn['role']:9} {turn['content']!r}")
        training = store.list(filters={"policy_version": "ckpt-7", "include_in_training": True})
        print(f"rows for training: {[row['id'] for row in training]}")
        assert len(training) == 1 and training[0]["reward"] == 1.0

        shot = store.get("traj-1-shot")
        assert "binary_payload" not in shot  # reads leave the blob out ...
        assert store.get_blob("traj-1-shot") == png  # ... and get_blob fetches it
        print(f"artifact: {shot['artifact_type']}, {shot['payload_size']} bytes")

    # A store reopened later (or by another process) sees every flushed row.
    reopened = strata.RolloutStore.open(f"{directory}/rollouts")
    assert len(reopened.list()) == 5
    reopened.close()
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
