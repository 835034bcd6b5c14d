"""Context.export_training and Context.evaluate: training data out of a Context and retrieval
quality of one, as lance-context's Python API has them (§5.1), without external models.

Rewards: a record's reward is ``metadata["reward"]`` (a number), the convention these
exports read; records without one have none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["evaluate", "export_training", "retrieval_metrics"]

_TOKEN = re.compile(r"\w+", re.UNICODE)
_TASKS = ("sft", "preference", "rollout")
_FORMS = ("paired", "unpaired", "ranked")


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _reward(record: Mapping[str, Any]) -> float | None:
    metadata = record.get("metadata")
    value = metadata.get("reward") if isinstance(metadata, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _message(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": record["role"], "content": record["text"]}


def _examples(groups: dict[str, list[dict]], task: str, form: str, min_reward: float | None,
              skipped: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key, records in groups.items():
        if task == "sft":
            messages = [_message(r) for r in records]
            rewards = [x for x in (_reward(r) for r in records) if x is not None]
            if min_reward is not None and (not rewards or sum(rewards) < min_reward):
                skipped["below_min_reward"] += 1
                continue
            out.append((key, {"group": key, "messages": messages}))
        elif task == "rollout":
            steps = []
            total = 0.0
            for r in records:
                step = _message(r)
                reward = _reward(r)
                step["reward"] = reward
                total += reward or 0.0
                steps.append(step)
            if min_reward is not None and total < min_reward:
                skipped["below_min_reward"] += 1
                continue
            out.append((key, {"group": key, "steps": steps, "total_reward": total}))
        else:  # preference
            first = next((i for i, r in enumerate(records)
                          if r["role"] == "assistant" and _reward(r) is not None), None)
            if first is None:
                skipped["no_scored_responses"] += 1
                continue
            prompt = [_message(r) for r in records[:first] if r["role"] != "assistant"]
            candidates = [(r["text"], _reward(r)) for r in records[first:]
                          if r["role"] == "assistant" and _reward(r) is not None]
            if min_reward is not None:
                candidates = [c for c in candidates if c[1] >= min_reward]
            candidates.sort(key=lambda c: -c[1])
            if form == "unpaired":
                for text, reward in candidates:
                    out.append((key, {"group": key, "prompt": prompt, "completion": text,
                                      "reward": reward}))
                continue
            if len(candidates) < 2 or candidates[0][1] == candidates[-1][1]:
                skipped["no_preference"] += 1
                continue
            if form == "paired":
                out.append((key, {"group": key, "prompt": prompt, "chosen": candidates[0][0],
                                  "rejected": candidates[-1][0],
                                  "chosen_reward": candidates[0][1],
                                  "rejected_reward": candidates[-1][1]}))
            else:
                out.append((key, {"group": key, "prompt": prompt,
                                  "responses": [c[0] for c in candidates],
                                  "rewards": [c[1] for c in candidates]}))
    return out


_TEXT_KEYS = ("content", "chosen", "rejected", "completion", "responses")


def _example_text(example: Any) -> str:
    """The text an example trains on (message contents and completions), for dedup and
    decontamination; the JSON around it does not count."""
    parts: list[str] = []

    def walk(value: Any, collect: bool) -> None:
        if isinstance(value, str):
            if collect:
                parts.append(value)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, collect or k in _TEXT_KEYS)
        elif isinstance(value, list):
            for v in value:
                walk(v, collect)

    walk(example, False)
    return "\n".join(parts)


def _contaminants(against: Any) -> list[set[str]]:
    if against is None:
        return []
    if isinstance(against, (str, os.PathLike)):
        with open(against, encoding="utf-8") as f:
            texts = [line for line in f if line.strip()]
    else:
        texts = [t if isinstance(t, str) else json.dumps(t, sort_keys=True) for t in against]
    return [_tokens(t) for t in texts]


def _in_eval(key: str, seed: int, fraction: float) -> bool:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def export_training(
    ctx: Any,
    output_path: str | os.PathLike[str],
    *,
    task: str = "sft",
    format: str = "jsonl",
    group_by: str = "session_id",
    preference_form: str = "paired",
    filters: Mapping[str, Any] | None = None,
    dedup_threshold: float | None = None,
    decontaminate_against: Any = None,
    decontaminate_threshold: float = 0.8,
    min_reward: float | None = None,
    version: int | str | None = None,
    include_expired: bool = False,
    include_retired: bool = False,
    split: Mapping[str, Any] | None = None,
    emit_stats: bool = False,
) -> dict[str, Any]:
    """See Context.export_training."""
    if task not in _TASKS:
        raise ValueError(f"task must be one of {', '.join(_TASKS)}, found {task!r}")
    if format != "jsonl":
        raise ValueError(f"format must be 'jsonl', found {format!r}")
    if preference_form not in _FORMS:
        raise ValueError(f"preference_form must be one of {', '.join(_FORMS)}")
    for name, value in (("dedup_threshold", dedup_threshold),
                        ("decontaminate_threshold", decontaminate_threshold)):
        if value is not None and not 0 < value <= 1:
            raise ValueError(f"{name} must be in (0, 1], found {value}")
    fraction, seed, by = 0.0, 0, "group"
    if split is not None:
        fraction = float(split.get("eval_fraction", 0.1))
        seed = int(split.get("seed", 0))
        by = split.get("by", "group")
        if not 0 <= fraction < 1 or by not in ("group", "example"):
            raise ValueError("split needs eval_fraction in [0, 1) and by 'group' or 'example'")

    records = ctx._records_at(version, filters, include_expired, include_retired)
    groups: dict[str, list[dict]] = {}
    skipped = {"no_text": 0, "below_min_reward": 0, "no_scored_responses": 0,
               "no_preference": 0, "duplicates": 0, "contaminated": 0}
    for r in records:
        if r["text"] is None:
            skipped["no_text"] += 1
            continue
        key = r.get(group_by)
        groups.setdefault("" if key is None else str(key), []).append(r)
    examples = _examples(groups, task, preference_form, min_reward, skipped)

    contaminants = _contaminants(decontaminate_against)
    kept: list[tuple[str, dict[str, Any]]] = []
    seen: list[set[str]] = []
    seen_exact: set[str] = set()
    for key, example in examples:
        text = _example_text(example)
        tokens = _tokens(text)
        if any(_jaccard(tokens, c) >= decontaminate_threshold for c in contaminants):
            skipped["contaminated"] += 1
            continue
        if dedup_threshold is not None:
            duplicate = text in seen_exact or (
                dedup_threshold < 1 and any(_jaccard(tokens, s) >= dedup_threshold for s in seen))
            if duplicate:
                skipped["duplicates"] += 1
                continue
            seen_exact.add(text)
            seen.append(tokens)
        kept.append((key, example))

    output = os.fspath(output_path)
    root, ext = os.path.splitext(output)
    eval_path = f"{root}.eval{ext or '.jsonl'}" if split is not None else None
    train_n = eval_n = 0
    with open(output, "w", encoding="utf-8") as train, \
            (open(eval_path, "w", encoding="utf-8") if eval_path else open(os.devnull, "w")) as ev:
        for i, (key, example) in enumerate(kept):
            line = json.dumps(example, ensure_ascii=False, sort_keys=True) + "\n"
            if eval_path and _in_eval(key if by == "group" else f"{key}#{i}", seed, fraction):
                ev.write(line)
                eval_n += 1
            else:
                train.write(line)
                train_n += 1
    manifest = {
        "task": task, "format": format, "output_path": output, "eval_path": eval_path,
        "examples": train_n, "eval_examples": eval_n, "groups": len(groups),
        "records": len(records), "skipped": skipped, "group_by": group_by,
        "version": ctx.version() if version is None else version,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
    }
    if task == "preference":
        manifest["preference_form"] = preference_form
    if emit_stats:
        with open(f"{root}.stats.json", "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        manifest["stats_path"] = f"{root}.stats.json"
    return manifest


def retrieval_metrics(retrieved: list[str], relevant: set[str], k: int) -> dict[str, float]:
    """recall, precision, mrr, ndcg and hit_rate at k of one ranked list (binary relevance)."""
    top = retrieved[:k]
    hits = [1 if r in relevant else 0 for r in top]
    found = sum(hits)
    first = next((i for i, h in enumerate(hits) if h), None)
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return {
        "recall": found / len(relevant) if relevant else 0.0,
        "precision": found / k,
        "mrr": 1 / (first + 1) if first is not None else 0.0,
        "ndcg": dcg / ideal if ideal else 0.0,
        "hit_rate": 1.0 if found else 0.0,
    }


def evaluate(
    ctx: Any,
    queries: Iterable[Mapping[str, Any]],
    *,
    query_set_id: str = "eval",
    k: int = 10,
    mode: str = "vector",
    filters: Mapping[str, Any] | None = None,
    include_expired: bool = False,
    include_retired: bool = False,
) -> dict[str, Any]:
    """See Context.evaluate."""
    if mode not in ("vector", "hybrid"):
        raise ValueError(f"mode must be 'vector' or 'hybrid', found {mode!r}")
    if k < 1:
        raise ValueError("k must be positive")
    per_query = []
    for i, q in enumerate(queries):
        relevant = set(q.get("relevant_ids") or ())
        if not relevant:
            raise ValueError(f"queries[{i}] needs relevant_ids")
        vector, text = q.get("vector"), q.get("text", q.get("query"))
        if mode == "vector":
            rows = ctx.search(vector if vector is not None else text, limit=k, filters=filters,
                              include_expired=include_expired, include_retired=include_retired,
                              include_binary=False, include_embedding=False)
        else:
            rows = ctx.retrieve(text=text, vector=vector, limit=k, filters=filters,
                                include_expired=include_expired, include_retired=include_retired)
        retrieved = [r["external_id"] if r["external_id"] in relevant else r["id"] for r in rows]
        metrics = retrieval_metrics(retrieved, relevant, k)
        per_query.append({"id": q.get("id", i), "retrieved": retrieved, **metrics})
    n = len(per_query)
    report: dict[str, Any] = {"query_set_id": query_set_id, "k": k, "mode": mode, "queries": n}
    for name in ("recall", "precision", "mrr", "ndcg", "hit_rate"):
        report[name] = sum(p[name] for p in per_query) / n if n else 0.0
    report["per_query"] = per_query
    return report
