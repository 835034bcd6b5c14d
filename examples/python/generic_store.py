"""A strata GenericStore with a declared schema: add rows, filter them, read a blob column,
get vectors as numpy arrays, and fold the write-ahead log into the base table.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/generic_store.py [DIR]

DIR is where the store goes (default: a new temporary directory).
"""

import base64
import sys
import tempfile

import numpy as np

import strata

SCHEMA = {
    "id": {"type": "string", "nullable": False},
    "user": "string",
    "score": "float32",
    "tags": {"type": "list", "item": {"type": "string"}},
    "embedding": {"type": "vector", "dim": 4, "metric": "cosine"},
    "thumbnail": {"type": "binary", "blob": True},
}


def main(directory: str) -> None:
    uri = f"{directory}/documents"
    rng = np.random.default_rng(7)
    embeddings = rng.standard_normal((6, 4)).astype(np.float32)
    with strata.GenericStore.open(uri, SCHEMA) as store:
        store.add(
            [
                {"id": f"doc-{i}", "user": "ana" if i % 2 == 0 else "ben", "score": i / 10,
                 "tags": ["draft"] if i < 3 else ["final"], "embedding": embeddings[i],
                 "thumbnail": bytes([i]) * 16}
                for i in range(6)
            ]
        )
        # Deferred seal (the default): rows are visible after a flush.
        assert store.list() == []
        store.flush()

        rows = store.list(filter="user = 'ana' AND score >= 0.2")
        print(f"ana's rows scoring >= 0.2: {[r['id'] for r in rows]}")
        assert [r["id"] for r in rows] == ["doc-2", "doc-4"]
        assert all("thumbnail" not in r for r in rows)  # blob columns are read on request

        thumb = store.get("doc-3", columns=["thumbnail"])
        assert base64.b64decode(thumb["thumbnail"]) == bytes([3]) * 16

        # Vectors as numpy float32 arrays that share the store's memory (read-only).
        row = store.get("doc-5", vectors="numpy")
        np.testing.assert_array_equal(row["embedding"], embeddings[5])
        print(f"doc-5 embedding: {row['embedding']}")

        # Fold the pending generations into the base table.
        reclaimed = store.cleanup_wal()
        print(f"merged {reclaimed} generation(s); base version {store.version()}")

    # The schema is persisted with the store.
    existing = strata.GenericStore.open_existing(uri)
    print(f"columns: {[name for name, _ in existing.schema()['columns']]}")
    assert len(existing.list()) == 6
    existing.close()
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
