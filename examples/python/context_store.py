"""An agent's memory in a strata Context: remember messages with embeddings, search and
retrieve them, supersede a fact, snapshot and fork, and replicate the store to a replica.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/context_store.py [DIR]

DIR is where the stores go (default: a new temporary directory).
"""

import datetime as dt
import sys
import tempfile
import zlib

import numpy as np

import strata
from strata import replicate


def embed(text: str) -> np.ndarray:
    """A toy 8-dim embedding (a real agent would call a model)."""
    v = np.zeros(8, dtype=np.float32)
    for word in text.lower().split():
        v[zlib.crc32(word.encode()) % 8] += 1.0
    return v / max(1.0, float(np.linalg.norm(v)))


def main(directory: str) -> None:
    memory = f"{directory}/memory"
    with strata.Context(memory, embedding_dim=8, distance_metric="cosine") as ctx:
        for role, text in [("user", "my favourite colour is green"),
                           ("assistant", "noted: favourite colour green"),
                           ("user", "I live in Lisbon")]:
            ctx.add(role, text, embedding=embed(text), session_id="s1",
                    created_at=dt.datetime.now(dt.timezone.utc))
        # A fact the agent may revise later: keyed by external_id.
        ctx.upsert("assistant", "user lives in Lisbon", external_id="fact:city",
                   embedding=embed("lives in Lisbon"))
        hits = ctx.search(embed("what colour is my favourite"), limit=2)
        print("search:", [h["text"] for h in hits])
        fused = ctx.retrieve(text="Lisbon", vector=embed("where do I live"), limit=2)
        print("retrieve:", [(h["text"], h["matched_channels"]) for h in fused])

        ctx.upsert("assistant", "user moved to Porto", external_id="fact:city",
                   embedding=embed("moved to Porto"))
        print("fact now:", ctx.get(external_id="fact:city")["text"])
        label = ctx.snapshot("before-cleanup")
        branch = ctx.fork("what-if")
        branch.add("user", "actually I prefer blue", embedding=embed("prefer blue"))
        print("main has", ctx.entries(), "records; the branch has", branch.entries())
        branch.close()
        ctx.checkout(label)

    # Copy the store to a replica as verified bundles, then prove the replica's content.
    replicate.mark_base(memory, "nightly")
    replicate.export_changes(memory, f"{directory}/bundles", full=True)
    replicate.apply_changes(f"{directory}/replica", f"{directory}/bundles")
    assert replicate.verify(f"{directory}/replica")["matches"]
    with strata.Context(f"{directory}/replica") as replica:
        print("replica:", replica.entries(), "records")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="strata-context-"))
