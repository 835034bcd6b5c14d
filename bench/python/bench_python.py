"""The strata Python module beside the C++ API, in one run on the same data.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/bench_python.py \\
        [--rows 51200] [--batch 256] [--contexts 20000] [--queries 200] [--json FILE]

1. RolloutStore.add of --batch-row lists of dicts (RL rows: ~1 KB content, 64 output tokens
   and logprobs) into a new store, fsync on, beside build/release/bench/strata-python-ref
   timing RolloutStore::Add on the same rows (decoded from the same JSON before its clock
   starts). Goal: Python >= 50% of the C++ rows/s.
2. Context.search and Context.retrieve latency (p50 / p99) from Python over a store of
   --contexts records (384-dim embeddings), beside ContextStore::Search / Retrieve on the same
   store and the same queries.
Also prints where the Python add's time goes: dict -> record conversion (the GIL held) and the
engine call (the GIL released), from a second timed pass with the conversion alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import strata

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REF = os.path.join(HERE, "..", "..", "build", "release", "bench", "strata-python-ref")
WORDS = ("agent tool search answer plan step reward model check value error retry user code "
         "test file line output query return state done").split()


def rollout_rows(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(180))[:1024]
        rows.append({
            "id": f"ro-{i:012d}",
            "rollout_id": f"traj-{i // 16:010d}",
            "problem_id": f"prob-{(i // 16) % 5000:06d}",
            "sequence_order": i % 16,
            "role": "assistant",
            "created_at": (base + dt.timedelta(microseconds=i)).isoformat().replace("+00:00", "Z"),
            "content": text,
            "content_type": "text/plain",
            "relationships": [],
            "output_tokens": [rng.randrange(50000) for _ in range(64)],
            "output_logprobs": [round(-rng.random(), 6) for _ in range(64)],
            "reward": round(rng.random(), 3),
            "policy_version": "v1",
        })
    return rows


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def bench_rollouts(args, work: str, ref: str) -> dict:
    rows = rollout_rows(args.rows)
    jsonl = os.path.join(work, "rows.jsonl")
    with open(jsonl, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    batches = [rows[i:i + args.batch] for i in range(0, len(rows), args.batch)]

    py_dir = os.path.join(work, "py-rollouts")
    with strata.RolloutStore.open(py_dir) as store:
        start = time.perf_counter()
        for b in batches:
            store.add(b)
        py_seconds = time.perf_counter() - start
        assert len(store.list(limit=1)) in (0, 1)
    py_rate = len(rows) / py_seconds

    out = subprocess.run([ref, "rollout-add", jsonl, os.path.join(work, "cpp-rollouts"),
                          "--batch", str(args.batch)], capture_output=True, text=True, check=True)
    cpp = json.loads(out.stdout)

    # Where the Python add's time goes: the same batches into a memory store (no fsync), and
    # the conversion alone (a batch that fails after converting every row: the last row lacks
    # its rollout_id, so nothing is written).
    with strata.RolloutStore.open(f"memory://bench-{os.getpid()}") as mem:
        start = time.perf_counter()
        for b in batches:
            mem.add(b)
        mem_seconds = time.perf_counter() - start
        broken = [dict(b[-1]) for b in batches]
        for row in broken:
            row.pop("rollout_id")
        start = time.perf_counter()
        for b, last in zip(batches, broken):
            try:
                mem.add(b[:-1] + [last])
            except strata.InvalidRequestError:
                pass
        convert_seconds = time.perf_counter() - start
    return {
        "rows": len(rows), "batch": args.batch,
        "python_rows_per_second": py_rate, "cpp_rows_per_second": cpp["rows_per_second"],
        "ratio": py_rate / cpp["rows_per_second"],
        "python_us_per_row": py_seconds / len(rows) * 1e6,
        "cpp_us_per_row": cpp["seconds"] / cpp["rows"] * 1e6,
        "python_memory_store_us_per_row": mem_seconds / len(rows) * 1e6,
        "python_conversion_us_per_row": convert_seconds / len(rows) * 1e6,
    }


def bench_context(args, work: str, ref: str) -> dict:
    rng = np.random.default_rng(11)
    dim = 384
    path = os.path.join(work, "contexts")
    with strata.Context(path, embedding_dim=dim) as ctx:
        for start in range(0, args.contexts, 1000):
            n = min(1000, args.contexts - start)
            vectors = rng.standard_normal((n, dim), dtype=np.float32)
            ctx.add_many({"role": "user",
                          "content": " ".join(rng.choice(WORDS, 24)),
                          "embedding": vectors[i]} for i in range(n))
        queries = rng.standard_normal((args.queries, dim), dtype=np.float32)
        words = [str(w) for w in rng.choice(WORDS, args.queries)]
        ctx.search(queries[0], limit=10)  # warm: first reads open the files
        search_us, retrieve_us = [], []
        for q, w in zip(queries, words):
            start = time.perf_counter()
            ctx.search(q, limit=10)
            search_us.append((time.perf_counter() - start) * 1e6)
            start = time.perf_counter()
            ctx.retrieve(text=w, vector=q, limit=10)
            retrieve_us.append((time.perf_counter() - start) * 1e6)
    qpath = os.path.join(work, "queries.f32")
    queries.astype(np.float32).tofile(qpath)
    out = subprocess.run([ref, "context-query", path, qpath, "--limit", "10", "--text", *words],
                         capture_output=True, text=True, check=True)
    cpp = json.loads(out.stdout)
    return {
        "records": args.contexts, "dim": dim, "queries": args.queries,
        "python_search_p50_us": percentile(search_us, 0.5),
        "python_search_p99_us": percentile(search_us, 0.99),
        "cpp_search_p50_us": cpp["search_p50_us"], "cpp_search_p99_us": cpp["search_p99_us"],
        "python_retrieve_p50_us": percentile(retrieve_us, 0.5),
        "python_retrieve_p99_us": percentile(retrieve_us, 0.99),
        "cpp_retrieve_p50_us": cpp["retrieve_p50_us"],
        "cpp_retrieve_p99_us": cpp["retrieve_p99_us"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=51200)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--contexts", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ref", default=DEFAULT_REF, help="the strata-python-ref binary")
    parser.add_argument("--dir", default=None, help="parent of the scratch directory")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    if not os.path.exists(args.ref):
        print(f"{args.ref} not found: ninja -C build/release strata-python-ref", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="bench-python-", dir=args.dir)
    try:
        print(f"strata {strata.__version__}, Python {sys.version.split()[0]}, "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, data in {work}")
        r = bench_rollouts(args, work, args.ref)
        print(f"\n== RolloutStore.add: {r['rows']} rows in {r['batch']}-row batches of dicts, "
              "fsync on ==")
        print(f"  Python {r['python_rows_per_second']:>10.0f} rows/s "
              f"({r['python_us_per_row']:.1f} us/row)")
        print(f"  C++    {r['cpp_rows_per_second']:>10.0f} rows/s "
              f"({r['cpp_us_per_row']:.1f} us/row)")
        print(f"  Python / C++ = {r['ratio']:.0%} (goal >= 50%: "
              f"{'met' if r['ratio'] >= 0.5 else 'NOT met'})")
        print(f"  where Python's time goes: dict -> record conversion "
              f"{r['python_conversion_us_per_row']:.1f} us/row (GIL held); the whole add into a "
              f"memory store {r['python_memory_store_us_per_row']:.1f} us/row")
        c = bench_context(args, work, args.ref)
        print(f"\n== Context search / retrieve: {c['records']} records, {c['dim']}-dim, "
              f"{c['queries']} queries, limit 10 (p50 / p99 us) ==")
        print(f"  search    Python {c['python_search_p50_us']:>9.0f} / "
              f"{c['python_search_p99_us']:<9.0f}  C++ {c['cpp_search_p50_us']:>9.0f} / "
              f"{c['cpp_search_p99_us']:.0f}")
        print(f"  retrieve  Python {c['python_retrieve_p50_us']:>9.0f} / "
              f"{c['python_retrieve_p99_us']:<9.0f}  C++ {c['cpp_retrieve_p50_us']:>9.0f} / "
              f"{c['cpp_retrieve_p99_us']:.0f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rollout_add": r, "context_query": c}, f, indent=1)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
