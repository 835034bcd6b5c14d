"""Context stores of a `strata serve`: SyncRemoteContext (blocking calls) and RemoteContext
(lance-context's async RemoteContext, §5.2: the same calls run off the event loop).

Records come back as the embedded Context returns them (§5.1): id, external_id, run_id,
bot_id, session_id, tenant, source, role, content_type, text, binary (bytes), payload_uri,
payload_size, payload_checksum, embedding (a list, or a numpy float32 array with
vectors="numpy"), created_at (an aware datetime), state_metadata, metadata, relationships,
expires_at, retention_policy, lifecycle_status, retired_at, retired_reason, supersedes_id,
superseded_by_id. The server generates every id and one run_id per request.
"""

from __future__ import annotations

import base64
import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

from ._http import RemoteClient, parse_timestamp, rfc3339
from .aio import AsyncContext, _AsyncWrapper, _in_executor
from ._content import normalise_content
from .errors import AlreadyExistsError, InvalidRequestError, NotFoundError

__all__ = ["RemoteContext", "SyncRemoteContext"]


# AddRecordRequest fields taken from keyword arguments as they are.
_PLAIN_FIELDS = ("bot_id", "session_id", "tenant", "source", "external_id", "state_metadata",
                 "metadata", "retention_policy", "supersedes_id", "payload_uri", "payload_size",
                 "payload_checksum")
# Context.add arguments the HTTP API cannot set: the server assigns them.
_SERVER_SET = ("run_id", "created_at", "lifecycle_status", "retired_at", "retired_reason",
               "superseded_by_id")
_PATCH_FIELDS = ("bot_id", "session_id", "tenant", "source", "state_metadata", "metadata",
                 "relationships", "expires_at", "retention_policy", "lifecycle_status",
                 "retired_at", "retired_reason", "embedding", "payload_uri", "payload_size",
                 "payload_checksum")
_TIMESTAMPS = ("created_at", "expires_at", "retired_at")


def _vector(value: Any, what: str) -> list[float]:
    """A list, tuple or numpy array of numbers as a list of floats."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        try:
            return [float(v) for v in value]
        except (TypeError, ValueError):
            pass
    raise InvalidRequestError(f"{what} must be a sequence of numbers (a list or numpy array)")


def _timestamp(value: Any, field: str) -> Any:
    if isinstance(value, _dt.datetime):
        return rfc3339(value, field)
    return value


def _add_request(where: str, role: str = "user", content: Any = None,
                 content_type: str | None = None, data_type: str | None = None,
                 embedding: Any = None, expires_at: Any = None, relationships: Any = None,
                 **fields: Any) -> dict[str, Any]:
    """An AddRecordRequest from Context.add's arguments."""
    if content_type is not None and data_type is not None:
        raise InvalidRequestError("Specify only one of content_type or data_type")
    for name in _SERVER_SET:
        if fields.pop(name, None) is not None:
            raise InvalidRequestError(
                f"{where}: {name} cannot be set over HTTP (the server assigns it)"
            )
    unknown = set(fields) - set(_PLAIN_FIELDS)
    if unknown:
        raise TypeError(f"{where}: unexpected field(s) {', '.join(sorted(unknown))}")
    payload, content_type = normalise_content(content, content_type or data_type)
    out: dict[str, Any] = {"role": role, **payload}
    if content_type is not None:
        out["content_type"] = content_type
    if embedding is not None:
        out["embedding"] = _vector(embedding, f"{where}.embedding")
    if expires_at is not None:
        out["expires_at"] = _timestamp(expires_at, "expires_at")
    if relationships is not None:
        out["relationships"] = [dict(r) for r in relationships]
    for name in _PLAIN_FIELDS:
        if fields.get(name) is not None:
            out[name] = fields[name]
    return out


def _exactly_one_key(id: Any, external_id: Any, verb: str) -> None:  # noqa: A002
    if id is None and external_id is None:
        raise InvalidRequestError(f"{verb} requires either id or external_id")
    if id is not None and external_id is not None:
        raise InvalidRequestError(f"{verb} accepts only one of id or external_id")


class SyncRemoteContext:
    """A context store of a `strata serve`, with blocking calls: Context's methods over HTTP
    (the ones the HTTP API has). Safe to share between threads. RemoteContext wraps it for
    asyncio; AsyncContext(SyncRemoteContext...) is the same."""

    def __init__(self, client: RemoteClient, name: str, info: Mapping[str, Any],
                 owns_client: bool = False, vectors: str = "list") -> None:
        from .remote import _vector_format

        _vector_format(vectors)
        self._client = client
        self._owns_client = owns_client
        self._name = name
        self._uri = info.get("uri", "")
        self._vectors = vectors
        self._closed = False

    @classmethod
    def connect(
        cls,
        base_url: str,
        name: str,
        *,
        create: bool = True,
        embedding_dim: int | None = None,
        distance_metric: str | None = None,
        id_index_type: str | None = None,
        blob_columns: Iterable[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        vectors: str = "list",
        token: str | None = None,
        timeout: float | None = None,
        client: RemoteClient | None = None,
    ) -> SyncRemoteContext:
        """The context `name`. With create=True (the HTTP API's POST /contexts, which opens or
        creates) it is created when missing, with the given options (ignored for an existing
        context); with create=False a missing context is NotFoundError. vectors="numpy"
        returns embeddings as numpy float32 arrays."""
        from .remote import _client, _name

        c, owned = _client(base_url, token, timeout, client)
        name = _name(name)
        try:
            info = None
            if create:
                body: dict[str, Any] = {"name": name}
                for key, value in (("embedding_dim", embedding_dim),
                                   ("distance_metric", distance_metric),
                                   ("id_index_type", id_index_type),
                                   ("storage_options", storage_options)):
                    if value is not None:
                        body[key] = value
                if blob_columns is not None:
                    body["blob_columns"] = list(blob_columns)
                try:
                    info = c.post_json("contexts", body=body)
                except AlreadyExistsError:
                    info = None
            if info is None:
                info = c.get_json("contexts", name)
            return cls(c, name, info, owned, vectors)
        except BaseException:
            if owned:
                c.close()
            raise

    # -- plumbing --

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidRequestError(f"Context '{self._name}' is closed")

    def _target(self, *segments: str, query=None) -> str:
        return self._client.target("contexts", self._name, *segments, query=query)

    def _call(self, method: str, *segments: str, body: Any = None, query=None,
              idempotent: bool | None = None) -> Any:
        self._check_open()
        return self._client.request(method, self._target(*segments, query=query),
                                    json_body=body, idempotent=idempotent).json()

    def _record(self, dto: Mapping[str, Any] | None, *, include_binary: bool = True,
                include_embedding: bool = True) -> dict[str, Any] | None:
        if dto is None:
            return None
        record = dict(dto)
        record["text"] = record.pop("text_payload", None)
        binary = record.pop("binary_payload", None)
        record["binary"] = base64.b64decode(binary) if binary is not None and include_binary \
            else None
        embedding = record.get("embedding")
        if not include_embedding:
            record["embedding"] = None
        elif embedding is not None and self._vectors == "numpy":
            from .remote import _numpy

            np = _numpy()
            record["embedding"] = np.asarray(embedding, dtype=np.float32)
        for field in _TIMESTAMPS:
            record[field] = parse_timestamp(record.get(field))
        return record

    def _result(self, out: dict[str, Any]) -> dict[str, Any]:
        """An upsert / update answer with its record converted."""
        out.setdefault("replaced_id", None)
        out["record"] = self._record(out.get("record"))
        return out

    # -- accessors --

    @property
    def name(self) -> str:
        return self._name

    @property
    def client(self) -> RemoteClient:
        return self._client

    def uri(self) -> str:
        """The context's location on the server."""
        return self._uri

    def version(self) -> int:
        return self._call("GET", "version")["version"]

    # -- writes --

    def add(self, role: str = "user", content: Any = None, content_type: str | None = None,
            data_type: str | None = None, embedding: Any = None, **fields: Any
            ) -> dict[str, Any]:
        """Adds one record (Context.add's arguments; content str -> text, bytes -> binary):
        {"version", "id", "ids", "count"}. The record is visible when this returns."""
        record = _add_request("record", role, content, content_type, data_type, embedding,
                              **fields)
        out = self._call("POST", "records", body={"records": [record]}, idempotent=False)
        out["id"] = out["ids"][0]
        return out

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Adds records (mappings of add's arguments) in one write: {"version", "ids",
        "count"}."""
        body = [_add_request(f"records[{i}]", **_mapping(r, i)) for i, r in enumerate(records)]
        if not body:
            raise InvalidRequestError("records array must not be empty")
        return self._call("POST", "records", body={"records": body}, idempotent=False)

    def upsert(self, role: str = "user", content: Any = None, content_type: str | None = None,
               data_type: str | None = None, embedding: Any = None, *,
               key: str = "external_id", **fields: Any) -> dict[str, Any]:
        """Inserts the record, or replaces the live record with the same external_id:
        {"inserted", "replaced_id", "version", "record"}."""
        _check_upsert(key, fields.get("external_id"), "upsert requires external_id")
        record = _add_request("record", role, content, content_type, data_type, embedding,
                              **fields)
        out = self._call("PUT", "records", body={"record": record, "key": key},
                         idempotent=False)
        return self._result(out)

    def upsert_many(self, records: Iterable[Mapping[str, Any]], *,
                    key: str = "external_id") -> list[dict[str, Any]]:
        """upsert for each record, all or nothing: a list of upsert's results."""
        body = []
        for i, r in enumerate(records):
            fields = _mapping(r, i)
            _check_upsert(key, fields.get("external_id"),
                          f"upsert requires external_id (records[{i}])")
            body.append(_add_request(f"records[{i}]", **fields))
        if not body:
            raise InvalidRequestError("records array must not be empty")
        out = self._call("PUT", "records", "batch", body={"records": body, "key": key},
                         idempotent=False)
        return [self._result({**r, "version": out["version"]}) for r in out["results"]]

    def update(self, *, id: str | None = None, external_id: str | None = None,  # noqa: A002
               **patch: Any) -> dict[str, Any]:
        """Replaces the live record (by id or external_id, exactly one) with a patched copy
        under a new id: {"updated", "replaced_id", "version", "record"}; updated False (and
        record None) when there is no such live record."""
        _exactly_one_key(id, external_id, "update")
        unknown = set(patch) - set(_PATCH_FIELDS)
        if unknown:
            raise TypeError(f"update: unexpected field(s) {', '.join(sorted(unknown))}")
        body_patch = {}
        for name in _PATCH_FIELDS:
            value = patch.get(name)
            if value is None:
                continue
            if name == "embedding":
                value = _vector(value, "embedding")
            elif name in _TIMESTAMPS:
                value = _timestamp(value, name)
            elif name == "relationships":
                value = [dict(r) for r in value]
            body_patch[name] = value
        body: dict[str, Any] = {"patch": body_patch}
        if id is not None:
            body["id"] = id
        else:
            body["external_id"] = external_id
        out = self._call("PATCH", "records", body=body, idempotent=False)
        out.setdefault("record", None)
        return self._result(out)

    def delete(self, *, id: str | None = None,  # noqa: A002
               external_id: str | None = None) -> bool:
        """Tombstones the live record; True when there was one."""
        _exactly_one_key(id, external_id, "delete")
        if id is not None:
            out = self._call("DELETE", "records", id)
        else:
            out = self._call("DELETE", "records", query={"external_id": external_id})
        return bool(out["deleted"])

    forget = delete

    def flush(self) -> None:
        """Nothing to do: the server seals a context add before it answers (the embedded
        Context's flush, for code written against it)."""

    def checkout(self, version: int) -> None:
        """Pins the server's handle of this context to `version`: every client of the server
        then reads that version and writes are refused (the API cannot unpin it)."""
        self._call("POST", "checkout", body={"version": int(version)}, idempotent=True)

    def compact(self, *, target_rows_per_fragment: int | None = None,
                materialize_deletions: bool = True) -> dict[str, int]:
        body: dict[str, Any] = {"materialize_deletions": bool(materialize_deletions)}
        if target_rows_per_fragment is not None:
            body["target_rows_per_fragment"] = target_rows_per_fragment
        return self._call("POST", "compact", body=body, idempotent=False)

    def compaction_stats(self) -> dict[str, Any]:
        return self._call("GET", "compact", "stats")

    # -- reads --

    def get(self, *, id: str | None = None, external_id: str | None = None  # noqa: A002
            ) -> dict[str, Any] | None:
        """The live record with this id or external_id (exactly one), or None."""
        _exactly_one_key(id, external_id, "get")
        if id is not None:
            out = self._call("GET", "records", id)
        else:
            out = self._call("GET", "records", "by-external-id",
                             query={"external_id": external_id})
        return self._record(out.get("record"))

    def get_blob(self, id: str) -> bytes | None:  # noqa: A002
        """The record's binary payload, or None."""
        record = self.get(id=id)
        return None if record is None else record["binary"]

    def fetch_payload(self, id: str) -> bytes | None:  # noqa: A002
        """The bytes of the record's external payload (payload_uri); None when there is no
        such record. InvalidRequestError when it has no payload_uri."""
        self._check_open()
        try:
            return self._client.request("GET", self._target("records", id, "payload")).body
        except NotFoundError as e:
            if str(e).startswith("Record '"):
                return None
            raise

    def list(self, limit: int | None = None, offset: int | None = None,
             filters: Mapping[str, Any] | None = None, *, include_expired: bool = False,
             include_retired: bool = False, include_binary: bool = True,
             include_embedding: bool = True) -> list[dict[str, Any]]:
        from .remote import _count, _json_text

        query: dict[str, Any] = {"limit": _count(limit, "limit"),
                                 "offset": _count(offset, "offset"),
                                 "include_expired": bool(include_expired),
                                 "include_retired": bool(include_retired)}
        if filters:
            query["filters"] = _json_text(dict(filters))
        out = self._call("GET", "records", query=query)
        return [self._record(r, include_binary=include_binary,
                             include_embedding=include_embedding) for r in out["records"]]

    def related(self, target_id: str, relation: str | None = None, limit: int | None = None,
                *, include_expired: bool = False, include_retired: bool = False
                ) -> list[dict[str, Any]]:
        """Records with a relationship to `target_id` (of kind `relation` when given)."""
        from .remote import _count

        query = {"target_id": target_id, "relation": relation, "limit": _count(limit, "limit"),
                 "include_expired": bool(include_expired),
                 "include_retired": bool(include_retired)}
        out = self._call("GET", "records", "related", query=query)
        return [self._record(r) for r in out["records"]]

    def search(self, query: Any, limit: int | None = None,
               filters: Mapping[str, Any] | None = None, *, include_expired: bool = False,
               include_retired: bool = False, include_relationships: bool = False,
               include_binary: bool = True, include_embedding: bool = True
               ) -> list[dict[str, Any]]:
        """Nearest records to the vector `query` (a list or numpy array; the server has no
        embedding provider, so no text queries): records with `distance`, nearest first."""
        if isinstance(query, (str, bytes)):
            raise InvalidRequestError(
                "search over HTTP needs a vector query: the server has no embedding provider"
            )
        body: dict[str, Any] = {"query": _vector(query, "query"),
                                "include_expired": bool(include_expired),
                                "include_retired": bool(include_retired),
                                "include_relationships": bool(include_relationships)}
        if limit is not None:
            body["limit"] = limit
        if filters:
            body["filters"] = dict(filters)
        out = self._call("POST", "search", body=body, idempotent=True)
        results = []
        for hit in out["results"]:
            record = self._record(hit["record"], include_binary=include_binary,
                                  include_embedding=include_embedding)
            record["distance"] = hit["distance"]
            results.append(record)
        return results

    def retrieve(self, *, text: str | None = None, vector: Any = None,
                 limit: int | None = None, filters: Mapping[str, Any] | None = None,
                 include_expired: bool = False, include_retired: bool = False,
                 include_relationships: bool = False, fusion: str = "rrf",
                 text_scoring: str | None = None) -> list[dict[str, Any]]:
        """Hybrid retrieval (text and/or vector channels fused by RRF): records with score,
        vector_distance, text_score and matched_channels, best first. text_scoring "bm25"
        (the server's default) or "overlap"."""
        if fusion != "rrf":
            raise InvalidRequestError("retrieve fusion currently supports only 'rrf'")
        body: dict[str, Any] = {"fusion": fusion,
                                "include_expired": bool(include_expired),
                                "include_retired": bool(include_retired),
                                "include_relationships": bool(include_relationships)}
        if text is not None:
            body["text"] = text
        if vector is not None:
            body["vector"] = _vector(vector, "vector")
        if limit is not None:
            body["limit"] = limit
        if filters:
            body["filters"] = dict(filters)
        if text_scoring is not None:
            body["text_scoring"] = text_scoring
        out = self._call("POST", "retrieve", body=body, idempotent=True)
        results = []
        for hit in out["results"]:
            record = self._record(hit["record"])
            for key in ("score", "vector_distance", "text_score", "matched_channels"):
                record[key] = hit.get(key)
            results.append(record)
        return results

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "stats")

    def close(self) -> None:
        """Releases this handle (the context stays open on the server)."""
        self._closed = True
        if self._owns_client:
            self._client.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> SyncRemoteContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SyncRemoteContext({self._client.base_url!r}, {self._name!r})"


def _mapping(record: Any, i: int) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise TypeError(f"records[{i}] must be a mapping, found {type(record).__name__}")
    return dict(record)


def _check_upsert(key: str, external_id: Any, missing: str) -> None:
    if key != "external_id":
        raise InvalidRequestError("Only key='external_id' is currently supported")
    if not external_id:
        raise InvalidRequestError(missing)


class RemoteContext(_AsyncWrapper):
    """lance-context's RemoteContext: `await RemoteContext.connect(base_url, name)`, then the
    context's calls as coroutines (each a SyncRemoteContext call run in an executor);
    version() and uri() are synchronous. `sync` is the SyncRemoteContext underneath."""

    __slots__ = ()

    @classmethod
    async def connect(cls, base_url: str, name: str, *, executor=None,
                      **kwargs: Any) -> RemoteContext:
        """SyncRemoteContext.connect's arguments (create=True, embedding_dim, ...)."""
        sync = await _in_executor(executor, SyncRemoteContext.connect, base_url, name, **kwargs)
        return cls(sync, executor=executor)

    def version(self) -> int:
        return self._sync.version()

    def uri(self) -> str:
        return self._sync.uri()

    add = AsyncContext.add
    add_many = AsyncContext.add_many
    upsert = AsyncContext.upsert
    upsert_many = AsyncContext.upsert_many
    update = AsyncContext.update
    get = AsyncContext.get
    get_blob = AsyncContext.get_blob
    fetch_payload = AsyncContext.fetch_payload
    delete = AsyncContext.delete
    forget = AsyncContext.forget
    list = AsyncContext.list
    related = AsyncContext.related
    search = AsyncContext.search
    retrieve = AsyncContext.retrieve
    checkout = AsyncContext.checkout
    compact = AsyncContext.compact
    compaction_stats = AsyncContext.compaction_stats
