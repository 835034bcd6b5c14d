"""Context: agent memory, lance-context's ``Context`` API on strata's C++ context store."""

from __future__ import annotations

import json
import os
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol

from . import _strata
from ._common import mappings, text, uri_text, version_number
from ._content import normalise_content
from .errors import InvalidRequestError

__all__ = ["Context", "EmbeddingProvider"]

# add()'s keyword arguments besides role / content / content_type / data_type, as the store
# names them.
_RECORD_FIELDS = (
    "embedding",
    "bot_id",
    "session_id",
    "tenant",
    "source",
    "external_id",
    "run_id",
    "created_at",
    "state_metadata",
    "metadata",
    "relationships",
    "expires_at",
    "retention_policy",
    "lifecycle_status",
    "retired_at",
    "retired_reason",
    "supersedes_id",
    "superseded_by_id",
    "payload_uri",
    "payload_size",
    "payload_checksum",
)
_TIME_FIELDS = ("created_at", "expires_at", "retired_at")
_UPDATE_FIELDS = (
    "bot_id",
    "session_id",
    "tenant",
    "source",
    "state_metadata",
    "metadata",
    "relationships",
    "expires_at",
    "retention_policy",
    "lifecycle_status",
    "retired_at",
    "retired_reason",
    "embedding",
    "payload_uri",
    "payload_size",
    "payload_checksum",
)
_DEPRECATED_AWS = {
    "aws_access_key_id": "aws_access_key_id",
    "aws_secret_access_key": "aws_secret_access_key",
    "aws_session_token": "aws_session_token",
    "region": "aws_region",
    "endpoint_url": "aws_endpoint_url",
}
_ID_INDEX_TYPES = ("none", "zonemap", "btree")


class EmbeddingProvider(Protocol):
    """What ``Context(embedding_provider=...)`` takes: ``embed(texts)`` returns one vector
    (a list of floats or a 1-D numpy array) per text."""

    def embed(self, texts: Sequence[str]) -> Sequence[Any]: ...


def _timestamp(field: str, value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        raise ValueError(f"{field} must include timezone information")
    return value


class Context:
    """An agent's memory: records with text or binary content, optional embeddings, lifecycle
    and relationships, searchable by vector and text.

    ``Context(uri)`` opens (creating when missing) the store at a local path, a ``file://``
    URI or ``memory://NAME``. Adds are visible to reads when they return. One Context may be
    shared by threads: every call that does I/O runs without the GIL. Close it with
    :meth:`close` or a ``with`` block.
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
        allow_http: bool = False,
        enable_background_compaction: bool = False,
        compaction_interval_secs: float = 300,
        compaction_min_fragments: int = 5,
        compaction_target_rows: int = 1_000_000,
        quiet_hours: Iterable[tuple[int, int]] | None = None,
        id_index_type: str | None = None,
        embedding_dim: int | None = None,
        distance_metric: str | None = None,
        embedding_provider: EmbeddingProvider | None = None,
        _handle: Any = None,
        _branch: str = "main",
        **deprecated: Any,
    ) -> None:
        self._provider = embedding_provider
        self._branch = _branch
        self._defaults: dict[str, Any] = {}
        if _handle is not None:
            self._handle = _handle
            return
        options = dict(storage_options or {})
        for name, value in deprecated.items():
            if name == "allow_http":
                continue
            key = _DEPRECATED_AWS.get(name)
            if key is None:
                raise TypeError(f"Context() got an unexpected keyword argument '{name}'")
            warnings.warn(
                f"{name} is deprecated; pass storage_options={{'{key}': ...}} instead",
                DeprecationWarning,
                stacklevel=2,
            )
            if value is not None:
                options.setdefault(key, value)
        if allow_http:
            options.setdefault("aws_allow_http", True)
        if id_index_type is not None and id_index_type not in _ID_INDEX_TYPES:
            raise ValueError(
                f"id_index_type must be one of {', '.join(_ID_INDEX_TYPES)}, found {id_index_type!r}"
            )
        if embedding_provider is not None and not callable(
            getattr(embedding_provider, "embed", None)
        ):
            raise TypeError("embedding_provider must have an embed(texts) method")
        self._handle = _strata.ContextStoreHandle.open(
            uri_text(uri),
            options or None,
            embedding_dim=embedding_dim,
            distance_metric=distance_metric,
            enable_background_compaction=enable_background_compaction,
            compaction_interval_secs=float(compaction_interval_secs),
            compaction_min_fragments=int(compaction_min_fragments),
            compaction_target_rows=int(compaction_target_rows),
            quiet_hours=[(int(a), int(b)) for a, b in (quiet_hours or ())],
        )

    @classmethod
    def create(cls, uri: str | os.PathLike[str], **kwargs: Any) -> Context:
        """``Context(uri, **kwargs)``: opens the store, creating it when missing."""
        return cls(uri, **kwargs)

    # --- accessors ----------------------------------------------------------------------

    def uri(self) -> str:
        return self._handle.uri

    def branch(self) -> str:
        return self._branch

    def version(self) -> int:
        return self._handle.version()

    def entries(self) -> int:
        """How many records a list shows (visible ones)."""
        return len(self._handle.list(include_binary=False, include_embedding=False))

    @property
    def embedding_dim(self) -> int:
        return self._handle.embedding_dim

    @property
    def distance_metric(self) -> str:
        return self._handle.distance_metric

    # --- writes -------------------------------------------------------------------------

    def _record(
        self,
        role: Any,
        content: Any,
        content_type: str | None,
        data_type: str | None,
        fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        if content_type is not None and data_type is not None:
            raise ValueError("Specify only one of content_type or data_type")
        content_type = content_type if content_type is not None else data_type
        record: dict[str, Any] = dict(self._defaults)
        record["id"] = str(uuid.uuid4())  # replaced by an `id` field, when given
        record["role"] = text("role", role)
        payload, content_type = normalise_content(content, content_type)
        record.update(payload)
        if content_type is not None:
            record["content_type"] = content_type
        for name, value in fields.items():
            if value is None:
                continue
            if name in _TIME_FIELDS:
                value = _timestamp(name, value)
            record[name] = value
        return record

    def _embed_missing(self, records: list[dict[str, Any]]) -> None:
        if self._provider is None:
            return
        todo = [r for r in records if r.get("embedding") is None and "text_payload" in r]
        if todo:
            vectors = self._provider.embed([r["text_payload"] for r in todo])
            if len(vectors) != len(todo):
                raise InvalidRequestError(
                    f"embedding provider returned {len(vectors)} vectors for {len(todo)} texts"
                )
            for r, v in zip(todo, vectors):
                r["embedding"] = v

    def _records(self, records: Any) -> list[dict[str, Any]]:
        out = []
        for i, r in enumerate(mappings(records, "record")):
            if not isinstance(r, Mapping):
                raise TypeError(f"records[{i}] must be a mapping, found {type(r).__name__}")
            if "role" not in r or "content" not in r:
                missing = "role" if "role" not in r else "content"
                raise ValueError(f"records[{i}] requires '{missing}'")
            fields = dict(r)
            role = fields.pop("role")
            content = fields.pop("content")
            content_type = fields.pop("content_type", None)
            data_type = fields.pop("data_type", None)
            unknown = set(fields) - set(_RECORD_FIELDS) - {"id"}
            if unknown:
                raise TypeError(f"records[{i}]: unknown field(s) {', '.join(sorted(unknown))}")
            out.append(self._record(role, content, content_type, data_type, fields))
        self._embed_missing(out)
        return out

    def add(
        self,
        role: str,
        content: Any,
        content_type: str | None = None,
        data_type: str | None = None,
        **fields: Any,
    ) -> None:
        """Adds one record. ``content``: str (text), bytes (binary) or a table (Arrow IPC
        stream bytes). ``data_type`` is an alias of ``content_type``. Other fields:
        embedding, bot_id, session_id, tenant, source, external_id, run_id, created_at,
        state_metadata, metadata, relationships, expires_at, retention_policy,
        lifecycle_status, retired_at, retired_reason, supersedes_id, superseded_by_id,
        payload_uri, payload_size, payload_checksum."""
        unknown = set(fields) - set(_RECORD_FIELDS)
        if unknown:
            raise TypeError(f"add() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
        record = self._record(role, content, content_type, data_type, fields)
        self._embed_missing([record])
        self._handle.add([record])

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Adds records (mappings with ``role`` and ``content`` and add()'s other fields) in
        one write: all or nothing."""
        rows = self._records(records)
        if rows:
            self._handle.add(rows)

    def upsert(self, role: str, content: Any, *, key: str = "external_id", **fields: Any) -> dict:
        """Inserts the record, or supersedes the visible one with the same external_id.
        Returns ``{inserted, replaced_id, version, record}``."""
        return self.upsert_many([{"role": role, "content": content, **fields}], key=key)[0]

    def upsert_many(self, records: Iterable[Mapping[str, Any]], *, key: str = "external_id") -> list:
        """upsert() for many records in one write (all or nothing); results in order."""
        if key != "external_id":
            raise ValueError("Only key='external_id' is currently supported")
        rows = self._records(records)
        for r in rows:
            if not r.get("external_id"):
                raise ValueError("upsert requires external_id")
            if "supersedes_id" in r or "superseded_by_id" in r:
                raise TypeError("upsert does not take supersedes_id or superseded_by_id")
        return self._handle.upsert_many(rows)

    def update(self, *, id: str | None = None, external_id: str | None = None, **fields: Any) -> dict:
        """Writes a new version of the visible record ``id`` (or ``external_id``) with the
        given fields changed. Returns ``{updated, replaced_id, version, record}``;
        ``updated`` is False (and ``record`` None) when no record is visible."""
        unknown = set(fields) - set(_UPDATE_FIELDS)
        if unknown:
            raise TypeError(
                f"update() got unexpected keyword argument(s) {', '.join(sorted(unknown))}"
            )
        patch = {}
        for name, value in fields.items():
            if value is None:
                continue
            patch[name] = _timestamp(name, value) if name in _TIME_FIELDS else value
        result = self._handle.update(id, external_id, patch)
        if result is None:
            return {"updated": False, "replaced_id": None, "version": self.version(), "record": None}
        return result

    def delete(self, *, id: str | None = None, external_id: str | None = None) -> bool:
        """Tombstones the visible record; False when there is none."""
        return self._handle.delete(id, external_id)

    forget = delete

    def migrate_relationships(self) -> bool:
        return self._handle.migrate_relationships()

    # --- ingestion ----------------------------------------------------------------------

    def ingest_records(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        field_map: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
        source: str = "raw",
        batch_size: int = 1000,
        mode: str = "append",
        preserve_raw: bool = True,
        raw_metadata_key: str = "raw_record",
    ) -> dict[str, int]:
        """Maps raw records onto context records (``field_map``: target field -> raw key;
        unmapped ``role`` / ``content`` default to the raw ``role`` / ``content`` keys) and
        adds (``mode="append"``) or upserts (``"upsert"``, by external_id) them in batches.
        Returns ``{processed, inserted, updated, batches}``."""
        if mode not in ("append", "upsert"):
            raise ValueError(f"mode must be 'append' or 'upsert', found {mode!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        mapping = dict(field_map or {})
        counts = {"processed": 0, "inserted": 0, "updated": 0, "batches": 0}
        batch: list[dict[str, Any]] = []

        def flush() -> None:
            if not batch:
                return
            if mode == "append":
                self.add_many(batch)
                counts["inserted"] += len(batch)
            else:
                for r in self.upsert_many(batch):
                    counts["inserted" if r["inserted"] else "updated"] += 1
            counts["batches"] += 1
            batch.clear()

        for raw in records:
            if not isinstance(raw, Mapping):
                raise TypeError(f"records must be mappings, found {type(raw).__name__}")
            record: dict[str, Any] = {"source": source, **(defaults or {})}
            for target in ("role", "content", *_RECORD_FIELDS):
                key = mapping.get(target, target)
                if key in raw and raw[key] is not None:
                    record[target] = raw[key]
            record.setdefault("role", "user")
            if "content" not in record:
                raise ValueError(
                    f"record {counts['processed']} has no content "
                    f"(key {mapping.get('content', 'content')!r})"
                )
            if preserve_raw:
                metadata = dict(record.get("metadata") or {})
                metadata[raw_metadata_key] = json.loads(json.dumps(raw, default=str))
                record["metadata"] = metadata
            batch.append(record)
            counts["processed"] += 1
            if len(batch) >= batch_size:
                flush()
        flush()
        return counts

    def ingest_jsonl(self, path: str | os.PathLike[str], **kwargs: Any) -> dict[str, int]:
        """ingest_records() over a JSON Lines file (blank lines skipped)."""

        def rows() -> Iterable[Mapping[str, Any]]:
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except json.JSONDecodeError as e:
                            raise InvalidRequestError(f"{path}:{n}: {e}") from None

        return self.ingest_records(rows(), **kwargs)

    def ingest_messages(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        session_id: str | None = None,
        tenant: str | None = None,
        bot_id: str | None = None,
        external_id_prefix: str | None = None,
        source: str = "messages",
        batch_size: int = 1000,
        mode: str = "append",
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, int]:
        """Ingests chat messages (``{"role", "content"}`` mappings) in order; with
        ``external_id_prefix`` message i gets the external id ``"{prefix}#message-{i+1}"``."""
        rows = []
        for i, m in enumerate(messages):
            row = {"role": m.get("role", "user"), "content": m.get("content")}
            for name, value in (("session_id", session_id), ("tenant", tenant), ("bot_id", bot_id)):
                if value is not None:
                    row[name] = value
            if external_id_prefix is not None:
                row["external_id"] = f"{external_id_prefix}#message-{i + 1}"
            if metadata is not None:
                row["metadata"] = dict(metadata)
            rows.append(row)
        return self.ingest_records(
            rows, source=source, batch_size=batch_size, mode=mode, preserve_raw=False
        )

    # --- versions -----------------------------------------------------------------------

    def snapshot(self, label: str | None = None) -> str:
        """Tags what this Context shows now; returns the label (generated when None), which
        checkout() takes."""
        label = label if label is not None else f"snapshot-{uuid.uuid4().hex[:12]}"
        self._handle.snapshot(text("label", label))
        return label

    def fork(self, branch_name: str) -> Context:
        """A branch of this store from what it shows now, as a Context of its own."""
        handle = self._handle.fork(text("branch_name", branch_name))
        return Context("", _handle=handle, _branch=branch_name, embedding_provider=self._provider)

    def checkout(self, version_id: int | str) -> None:
        """Pins reads to a version (an int, or its decimal text) or a snapshot label."""
        if isinstance(version_id, str) and not version_id.isdigit():
            self._handle.checkout_snapshot(version_id)
        else:
            self._handle.checkout(version_number(int(version_id)))

    # --- reads --------------------------------------------------------------------------

    def list(
        self,
        limit: int | None = None,
        offset: int | None = None,
        filters: Mapping[str, Any] | None = None,
        *,
        include_expired: bool = False,
        include_retired: bool = False,
        include_binary: bool = True,
        include_embedding: bool = True,
    ) -> list[dict[str, Any]]:
        """Visible records matching ``filters``, by (created_at, id)."""
        return self._handle.list(
            limit, offset, filters, include_expired, include_retired, include_binary,
            include_embedding,
        )

    def get(self, *, id: str | None = None, external_id: str | None = None) -> dict | None:
        return self._handle.get(id, external_id)

    def get_blob(self, id: str) -> bytes | None:
        return self._handle.get_blob(text("id", id))

    def fetch_payload(self, id: str) -> bytes | None:
        return self._handle.fetch_payload(text("id", id))

    def put_payload(self, uri: str, data: bytes) -> int:
        return self._handle.put_payload(text("uri", uri), data)

    def related(
        self,
        target_id: str,
        relation: str | None = None,
        limit: int | None = None,
        *,
        include_expired: bool = False,
        include_retired: bool = False,
    ) -> list[dict[str, Any]]:
        """Visible records with a relationship to ``target_id`` (of kind ``relation``)."""
        text("target_id", target_id)
        if not (include_expired or include_retired):
            return self._handle.related(target_id, relation, limit)
        out = []
        for r in self._handle.list(None, None, None, include_expired, include_retired, True, True):
            if any(
                rel["target_id"] == target_id and (relation is None or rel["relation"] == relation)
                for rel in r["relationships"]
            ):
                out.append(r)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def _query_vector(self, query: Any) -> Any:
        if isinstance(query, (str, bytes, bytearray)):
            if self._provider is None:
                raise InvalidRequestError(
                    "a text query needs an embedding provider (Context(embedding_provider=...)); "
                    "pass a vector instead"
                )
            if not isinstance(query, str):
                query = bytes(query).decode("utf-8")
            return self._provider.embed([query])[0]
        return query

    @staticmethod
    def _shape(
        rows: list[dict[str, Any]], relationships: bool, binary: bool = True, embedding: bool = True
    ) -> list[dict[str, Any]]:
        for r in rows:
            if not relationships:
                r["relationships"] = []
            if not binary:
                r["binary"] = None
            if not embedding:
                r["embedding"] = None
        return rows

    def search(
        self,
        query: Any,
        limit: int | None = None,
        filters: Mapping[str, Any] | None = None,
        *,
        include_expired: bool = False,
        include_retired: bool = False,
        include_relationships: bool = False,
        include_binary: bool = True,
        include_embedding: bool = True,
    ) -> list[dict[str, Any]]:
        """The records nearest to ``query`` (a vector, or text embedded by the provider),
        each with its ``distance``, nearest first."""
        rows = self._handle.search(
            self._query_vector(query), limit, filters, include_expired, include_retired
        )
        return self._shape(rows, include_relationships, include_binary, include_embedding)

    def retrieve(
        self,
        *,
        text: str | None = None,
        vector: Any = None,
        limit: int | None = None,
        filters: Mapping[str, Any] | None = None,
        include_expired: bool = False,
        include_retired: bool = False,
        include_relationships: bool = False,
        fusion: str = "rrf",
    ) -> list[dict[str, Any]]:
        """Hybrid retrieval: a vector channel and a text (BM25) channel fused by reciprocal
        rank; each record with ``score``, ``vector_distance``, ``text_score`` and
        ``matched_channels``."""
        if fusion != "rrf":
            raise ValueError("retrieve fusion currently supports only 'rrf'")
        if vector is None and text is not None and self._provider is not None:
            vector = self._provider.embed([text])[0]
        rows = self._handle.retrieve(
            text, vector, limit, filters, include_expired, include_retired
        )
        return self._shape(rows, include_relationships)

    # --- training data and evaluation ------------------------------------------------

    def _pinned(self, version: int | str) -> Context:
        """A second, read-only handle on this store pinned to ``version`` (this one stays as
        it is; a handle that only reads claims no writer shard)."""
        if self._branch != "main":
            raise InvalidRequestError("version= is not supported on a forked Context")
        pinned = Context("", _handle=_strata.ContextStoreHandle.open(
            self.uri(), None, create_if_missing=False), embedding_provider=self._provider)
        try:
            pinned.checkout(version)
        except BaseException:
            pinned.close()
            raise
        return pinned

    def _records_at(
        self,
        version: int | str | None,
        filters: Mapping[str, Any] | None,
        include_expired: bool,
        include_retired: bool,
    ) -> list[dict[str, Any]]:
        """The visible records (no binary, no embedding) at ``version`` (a version number or
        snapshot label; None: what this Context shows), leaving the Context as it was."""
        if version is None:
            return self.list(None, None, filters, include_expired=include_expired,
                             include_retired=include_retired, include_binary=False,
                             include_embedding=False)
        with self._pinned(version) as pinned:
            return pinned.list(None, None, filters, include_expired=include_expired,
                               include_retired=include_retired, include_binary=False,
                               include_embedding=False)

    def export_training(
        self,
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
    ) -> dict:
        """Writes training examples from this Context's records to ``output_path`` (JSON
        Lines) and returns a manifest. ``task``: "sft" (one ``{"messages"}`` example per
        ``group_by`` group, default session_id), "preference" (``preference_form`` "paired":
        prompt / chosen / rejected; "unpaired": one scored completion per line; "ranked":
        responses by reward) or "rollout" (the group's steps with rewards). Rewards are
        ``metadata["reward"]``. Options: filters, version, include_expired, include_retired,
        min_reward, dedup_threshold (token Jaccard; 1.0 drops exact duplicates),
        decontaminate_against (texts or a file) with decontaminate_threshold, split
        ``{"eval_fraction", "by": "group" | "example", "seed"}`` (the eval examples go to
        ``<name>.eval.jsonl``) and emit_stats (the manifest also to ``<name>.stats.json``)."""
        from .training import export_training

        return export_training(
            self, output_path, task=task, format=format, group_by=group_by,
            preference_form=preference_form, filters=filters, dedup_threshold=dedup_threshold,
            decontaminate_against=decontaminate_against,
            decontaminate_threshold=decontaminate_threshold, min_reward=min_reward,
            version=version, include_expired=include_expired, include_retired=include_retired,
            split=split, emit_stats=emit_stats,
        )

    def evaluate(
        self,
        queries: Iterable[Mapping[str, Any]],
        *,
        query_set_id: str = "eval",
        k: int = 10,
        mode: str = "vector",
        filters: Mapping[str, Any] | None = None,
        include_expired: bool = False,
        include_retired: bool = False,
    ) -> dict:
        """Retrieval quality over ``queries`` (mappings with ``relevant_ids`` and a
        ``vector`` and / or ``text``): mean recall, precision, MRR, nDCG and hit rate at ``k``
        (default 10) with ``mode`` "vector" (search) or "hybrid" (retrieve), plus per-query
        figures. Options: query_set_id, k, mode, filters, include_expired, include_retired."""
        from .training import evaluate

        return evaluate(
            self, queries, query_set_id=query_set_id, k=k, mode=mode, filters=filters,
            include_expired=include_expired, include_retired=include_retired,
        )

    def evaluate_versions(
        self,
        queries: Iterable[Mapping[str, Any]],
        baseline_version: int | str,
        candidate_version: int | str,
        **options: Any,
    ) -> dict:
        """evaluate() at two versions (numbers or snapshot labels): ``{baseline, candidate,
        delta}`` with delta = candidate - baseline per metric."""
        from .training import evaluate

        queries = list(queries)
        reports = {}
        for name, version in (("baseline", baseline_version), ("candidate", candidate_version)):
            with self._pinned(version) as pinned:
                reports[name] = evaluate(pinned, queries, **options)
        metrics = ("recall", "precision", "mrr", "ndcg", "hit_rate")
        delta = {m: reports["candidate"][m] - reports["baseline"][m] for m in metrics}
        return {**reports, "delta": delta}

    # --- maintenance --------------------------------------------------------------------

    def compact(
        self, *, target_rows_per_fragment: int | None = None, materialize_deletions: bool = True
    ) -> dict[str, int]:
        """Rewrites small fragments into bigger ones. Returns ``{fragments_removed,
        fragments_added, files_removed, files_added}``; CompactionInProgressError when
        another compaction of this handle runs."""
        return self._handle.compact(target_rows_per_fragment, materialize_deletions)

    def compaction_stats(self) -> dict[str, Any]:
        """``{total_fragments, is_compacting, last_compaction, last_error,
        total_compactions}``."""
        return self._handle.compaction_stats()

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        """Seals and releases the store; calls after it raise InvalidRequestError."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"version {self.version()}"
        return f"Context({self.uri()!r}, branch={self._branch!r}, {state})"
