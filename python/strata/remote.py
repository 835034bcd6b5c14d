"""Remote twins of strata's stores: the same methods, parameters and results as the embedded
RolloutStore, GenericStore, DatagenStore and Context (lance-context's Python API, §5), over
HTTP to a `strata serve` (docs/server.md, docs/python-remote.md). Standard library only
(numpy when a caller asks for numpy vectors), but for the datagen store's item and event ids
and stream writer class, which are strata.datagen's.

    store = RemoteRolloutStore.connect_or_create("http://127.0.0.1:3000", "exp1")
    store.add({"rollout_id": "traj-1", "content": "hello", "reward": 1.0})
    store.get_trajectory("traj-1")

Every store holds a RemoteClient (a pool of keep-alive connections); a handle may be shared
by any number of threads. Errors are the classes of strata.errors, carrying the server's
message.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from . import _datagen
from ._common import mappings, text
from ._http import RemoteClient, dumps, rfc3339
from .datagen import (
    DatagenItemId,
    DatagenStreamWriter,
    ItemIdArg,
    _epoch,
    _item_id,
    datagen_event_id,
)
from .errors import AlreadyExistsError, InvalidRequestError, NotFoundError

__all__ = [
    "DatagenItemId",
    "DatagenStreamWriter",
    "RemoteClient",
    "RemoteContext",
    "RemoteDatagenStore",
    "RemoteGenericStore",
    "RemoteRolloutStore",
    "SyncRemoteContext",
    "datagen_event_id",
]

# Most ids per ?ids= query of root-status (the server splits the list on commas).
_ROOT_STATUS_BATCH = 200


def _client(base_url: str | RemoteClient, token, timeout, client) -> tuple[RemoteClient, bool]:
    """The client to use and whether the store owns it (and closes it with itself)."""
    if client is not None:
        return client, False
    if isinstance(base_url, RemoteClient):
        return base_url, False
    kwargs = {} if timeout is None else {"timeout": timeout}
    return RemoteClient(base_url, token=token, **kwargs), True


def _name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, found {type(name).__name__}")
    return name


def _records(value: Any, what: str) -> list[Any]:
    """One mapping or an iterable of them, as a list."""
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(
            f"expected a {what} (a mapping) or an iterable of them, found {type(value).__name__}"
        )
    out = list(value)
    for i, item in enumerate(out):
        if not isinstance(item, Mapping):
            raise TypeError(f"{what}s[{i}] must be a mapping, found {type(item).__name__}")
    return out


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, found {type(value).__name__}")
    if value < 0:
        raise InvalidRequestError(f"{what} must not be negative, got {value}")
    return value


def _version(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"version must be an int, found {type(value).__name__}")
    return value


def _text(value: Any, what: str) -> str:
    if isinstance(value, DatagenItemId):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, found {type(value).__name__}")
    return value


def _absent(error: NotFoundError, prefix: str) -> bool:
    """True when a 404 says the row is missing (its message starts with `prefix`), not the
    store or the route."""
    return str(error).startswith(prefix)


def _with_timestamps(record: Mapping[str, Any], fields: Iterable[str], where: str) -> dict:
    """A copy of `record` with datetime values of `fields` as RFC 3339 text (naive ones
    refused, naming the field)."""
    out = dict(record)
    for field in fields:
        value = out.get(field)
        if isinstance(value, _dt.datetime):
            out[field] = rfc3339(value, f"{where}.{field}")
    return out


def _numpy():
    try:
        import numpy
    except ImportError as e:  # numpy is optional
        raise ImportError("vectors='numpy' needs numpy (Debian: python3-numpy)") from e
    return numpy


def _vector_format(vectors: Any) -> str:
    if not isinstance(vectors, str):
        raise TypeError(f"vectors must be a str, found {type(vectors).__name__}")
    if vectors not in ("list", "numpy"):
        raise InvalidRequestError(f"vectors: expected 'list' or 'numpy', found '{vectors}'")
    return vectors


class _RemoteStore:
    """What every remote store shares: its client, name and kind path."""

    _kind = ""  # the route segment: rollouts, generic, datagen
    _title = ""  # the server's name for the kind in messages ("Rollout store")

    def __init__(self, client: RemoteClient, name: str, info: Mapping[str, Any],
                 owns_client: bool = False) -> None:
        self._client = client
        self._owns_client = owns_client
        self._name = name
        self._uri = info.get("uri", "")
        self._closed = False

    @classmethod
    def _connect(cls, base_url, name, token, timeout, client):
        c, owned = _client(base_url, token, timeout, client)
        name = _name(name)
        try:
            return cls(c, name, cls._info(c, name), owned)
        except BaseException:
            if owned:
                c.close()
            raise

    @classmethod
    def _connect_or_create(cls, base_url, name, token, timeout, client, body):
        c, owned = _client(base_url, token, timeout, client)
        name = _name(name)
        try:
            info = cls._create(c, {"name": name, **body})
            if info is None:
                info = cls._info(c, name)
                cls._check_existing(c, body, info)
            return cls(c, name, info, owned)
        except BaseException:
            if owned:
                c.close()
            raise

    @classmethod
    def _check_existing(cls, client: RemoteClient, body: dict, info: dict) -> None:
        """Raises when an existing store cannot serve a connect_or_create with `body`."""

    @classmethod
    def _info(cls, client: RemoteClient, name: str) -> dict[str, Any]:
        return client.get_json(cls._kind, name)

    @classmethod
    def _create(cls, client: RemoteClient, body: dict[str, Any]) -> dict[str, Any] | None:
        """POST /{kind}: the new store's info, or None when it exists already."""
        try:
            return client.post_json(cls._kind, body=body)
        except AlreadyExistsError:
            return None

    def _target(self, *segments: str, query: Mapping[str, Any] | None = None) -> str:
        return self._client.target(self._kind, self._name, *segments, query=query)

    def _get(self, *segments: str, query=None) -> Any:
        self._check_open()
        return self._client.get_json(self._kind, self._name, *segments, query=query)

    def _post(self, *segments: str, body=None, query=None, idempotent=False) -> Any:
        self._check_open()
        return self._client.post_json(self._kind, self._name, *segments, body=body, query=query,
                                      idempotent=idempotent)

    def _bytes_or_none(self, segments: tuple[str, ...], missing_prefix: str) -> bytes | None:
        self._check_open()
        try:
            return self._client.request("GET", self._target(*segments)).body
        except NotFoundError as e:
            if _absent(e, missing_prefix):
                return None
            raise

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidRequestError(f"{self._title} '{self._name}' is closed")

    @property
    def name(self) -> str:
        return self._name

    @property
    def uri(self) -> str:
        """The store's location on the server."""
        return self._uri

    @property
    def base_url(self) -> str:
        return self._client.base_url

    @property
    def client(self) -> RemoteClient:
        return self._client

    def version(self) -> int:
        """The base table version the server's handle reads."""
        return self._get("version")["version"]

    def checkout(self, version: int) -> None:
        """Pins the server's handle of this store to base version `version`. The handle is
        shared by every client of the server: all of them read that version, and writes are
        refused, until the server reopens the store (the API has no route to unpin it)."""
        self._post("checkout", body={"version": _version(version)}, idempotent=True)

    def refresh_latest(self) -> None:
        """Not available remotely: the server has no route that unpins a checkout."""
        raise InvalidRequestError(
            f"{self._title} '{self._name}': refresh_latest is not available over HTTP "
            "(strata serve has no route that unpins a checkout; restart the server or wait "
            "for the handle's eviction)"
        )

    def compact(self, *, target_rows_per_fragment: int | None = None,
                materialize_deletions: bool = True) -> dict[str, int]:
        """Compacts the base table: {fragments_removed, fragments_added, files_removed,
        files_added}. CompactionInProgressError while another compaction runs."""
        body: dict[str, Any] = {"materialize_deletions": bool(materialize_deletions)}
        if target_rows_per_fragment is not None:
            body["target_rows_per_fragment"] = target_rows_per_fragment
        return self._post("compact", body=body)

    def compaction_stats(self) -> dict[str, Any]:
        """{total_fragments, is_compacting, last_compaction (RFC 3339 or None), last_error,
        total_compactions}."""
        return self._get("compact", "stats")

    def stats(self) -> dict[str, Any]:
        """The server's observation of the store (docs/server.md: GET /{kind}/{name}/stats)."""
        return self._get("stats")

    def close(self) -> None:
        """Releases this handle (and the idle connections of its client, unless the client
        was passed in). The store stays open on the server. Later calls raise
        InvalidRequestError; closing again does nothing."""
        self._closed = True
        if self._owns_client:
            self._client.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " (closed)" if self._closed else ""
        return f"{type(self).__name__}({self._client.base_url!r}, {self._name!r}){state}"


# --- Rollouts --------------------------------------------------------------------------------


class RemoteRolloutStore(_RemoteStore):
    """A rollout store of a `strata serve`: RolloutStore's methods over HTTP.

    Rows are the dicts of the embedded store (every column but binary_payload, which get_blob
    reads; created_at as RFC 3339 text). Each add is sealed by the server before it answers
    (?flush=true), so it is visible to every reader at once and flush() has nothing to do.
    """

    _kind = "rollouts"
    _title = "Rollout store"

    @classmethod
    def connect(cls, base_url: str, name: str, *, token: str | None = None,
                timeout: float | None = None,
                client: RemoteClient | None = None) -> RemoteRolloutStore:
        """The existing store `name`; NotFoundError when the server has none."""
        return cls._connect(base_url, name, token, timeout, client)

    @classmethod
    def connect_or_create(cls, base_url: str, name: str, *,
                          storage_options: Mapping[str, Any] | None = None,
                          token: str | None = None, timeout: float | None = None,
                          client: RemoteClient | None = None) -> RemoteRolloutStore:
        """The store `name`, created when the server has none."""
        body = {} if storage_options is None else {"storage_options": dict(storage_options)}
        return cls._connect_or_create(base_url, name, token, timeout, client, body)

    def add(self, record_or_records: Mapping[str, Any] | Iterable[Mapping[str, Any]]
            ) -> dict[str, Any]:
        """Appends one record or many in one request: {"version", "ids", "count"}. A record
        without `id` gets a random UUID (version 4); bytes in binary_payload travel base64;
        numpy arrays are accepted for the list columns; a datetime created_at must be
        timezone aware. Bad input raises InvalidRequestError naming the record and field,
        and writes nothing."""
        records = []
        for i, r in enumerate(_records(record_or_records, "record")):
            out = _with_timestamps(r, ("created_at",), f"records[{i}]")
            if out.get("id") is None:
                out["id"] = str(uuid.uuid4())
            records.append(out)
        if not records:
            raise InvalidRequestError("records array must not be empty")
        # The ids are the client's: a resend after a dropped connection re-appends the same
        # rows, which the store collapses (newest wins per id).
        return self._post("records", body={"records": records}, query={"flush": "true"},
                          idempotent=True)

    def add_one(self, **fields: Any) -> dict[str, Any]:
        """add(fields): one record from keyword arguments."""
        return self.add(fields)

    def flush(self) -> None:
        """Nothing to do: every remote add is sealed before the server answers."""
        self._check_open()

    def list(self, limit: int | None = None, offset: int | None = None,
             filters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows matching `filters` (equality on rollout_id, problem_id, dataset, role,
        content_type, policy_version, artifact_type; include_in_training a bool; "" is no
        filter; any other key is refused), `offset` skipped, at most `limit`."""
        query: dict[str, Any] = {"limit": _count(limit, "limit"),
                                 "offset": _count(offset, "offset")}
        if filters is not None:
            if not isinstance(filters, Mapping):
                raise TypeError(f"filters must be a mapping, found {type(filters).__name__}")
            if filters:
                query["filters"] = _json_text(filters)
        return [_rollout_row(r) for r in self._get("records", query=query)["records"]]

    def get_trajectory(self, rollout_id: str) -> list[dict[str, Any]]:
        """The rows of one rollout ordered by sequence_order, then id. (The server has no
        trajectory route: a filtered list, sorted here.)"""
        rollout_id = _text(rollout_id, "rollout_id")
        if not rollout_id:
            raise InvalidRequestError("rollout_id must not be empty")
        rows = self.list(filters={"rollout_id": rollout_id})
        rows.sort(key=lambda r: (r.get("sequence_order") or 0, r["id"]))
        return rows

    def get(self, id: str) -> dict[str, Any] | None:  # noqa: A002 (the reference's name)
        """The row with this id (without its blob), or None."""
        record = self._get("records", _text(id, "id"))["record"]
        return None if record is None else _rollout_row(record)

    def get_blob(self, id: str) -> bytes | None:  # noqa: A002
        """The binary_payload of the row with this id; None when it has none or there is no
        such row."""
        return self._bytes_or_none(("records", _text(id, "id"), "blob"), "Rollout '")


def _rollout_row(record: dict[str, Any]) -> dict[str, Any]:
    record.pop("binary_payload", None)  # reads never carry it (get_blob does)
    return record


def _json_text(value: Any) -> str:
    return dumps(value).decode("utf-8")


# --- Generic stores --------------------------------------------------------------------------


def schema_spec(schema: Any) -> dict[str, Any]:
    """A generic store schema as the server's spec JSON {"columns": [[name, type], ...]}.
    `schema` is that spec, strata's schema JSON ({"fields": ...}), or a mapping name -> type
    where a type is a shorthand string ("string", "int64", ...) or a type object
    ({"type": "vector", "dim": 4}, {"type": "string", "nullable": False})."""
    if not isinstance(schema, Mapping):
        raise TypeError(
            f"schema must be a mapping (name -> type, or a spec), found {type(schema).__name__}"
        )
    if "columns" in schema and not isinstance(schema["columns"], (str, Mapping)):
        return {k: (list(v) if k == "columns" else v) for k, v in schema.items()}
    if "fields" in schema and isinstance(schema["fields"], list):
        return dict(schema)
    columns = []
    for name, type_ in schema.items():
        if isinstance(type_, str):
            type_ = {"type": type_}
        elif not isinstance(type_, Mapping):
            raise TypeError(
                f"schema['{name}'] must be a type name or a type object, "
                f"found {type(type_).__name__}"
            )
        columns.append([name, dict(type_)])
    return {"columns": columns}


class RemoteGenericStore(_RemoteStore):
    """A generic store (user-declared schema, key `id`) of a `strata serve`: GenericStore's
    methods over HTTP. Rows are dicts of the declared columns with nulls left out, binary as
    base64 text, timestamps as integer microseconds. Added rows are visible after flush()
    unless the store was created with seal_on_add=True, as for an embedded store."""

    _kind = "generic"
    _title = "Generic store"

    def __init__(self, client: RemoteClient, name: str, info: Mapping[str, Any],
                 owns_client: bool = False) -> None:
        super().__init__(client, name, info, owns_client)
        self._schema = info.get("schema")

    @classmethod
    def connect(cls, base_url: str, name: str, *, token: str | None = None,
                timeout: float | None = None,
                client: RemoteClient | None = None) -> RemoteGenericStore:
        """The existing store `name` with its persisted schema; NotFoundError when the server
        has none."""
        return cls._connect(base_url, name, token, timeout, client)

    @classmethod
    def connect_or_create(cls, base_url: str, name: str, schema: Any, *,
                          storage_options: Mapping[str, Any] | None = None,
                          seal_on_add: bool = False, token: str | None = None,
                          timeout: float | None = None,
                          client: RemoteClient | None = None) -> RemoteGenericStore:
        """The store `name`, created with `schema` (see schema_spec) when the server has
        none. An existing store must have been created with the same schema
        (InvalidRequestError otherwise); its seal mode is the one it was created with."""
        body: dict[str, Any] = {"schema": schema_spec(schema), "seal_on_add": bool(seal_on_add)}
        if storage_options is not None:
            body["storage_options"] = dict(storage_options)
        return cls._connect_or_create(base_url, name, token, timeout, client, body)

    @classmethod
    def _check_existing(cls, client: RemoteClient, body: dict, info: dict) -> None:
        if not _same_spec(body["schema"], info.get("schema")):
            raise InvalidRequestError(
                f"store at '{info.get('uri')}' was created with a different schema; "
                "open it without a schema to use the persisted one"
            )

    def schema(self) -> dict[str, Any]:
        """The persisted spec: {"columns": [[name, type], ...]}."""
        if self._schema is None:
            self._schema = self._get()["schema"]
        return self._schema

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Appends rows (a list of mappings; bytes go as base64, datetimes as RFC 3339,
        numpy arrays as lists): returns the base version. InvalidRequestError names the row
        and column of a bad value, and nothing is written."""
        if isinstance(rows, Mapping):
            raise TypeError("rows must be a list of mappings, found a mapping")
        body = [_with_timestamps(r, list(r), f"rows[{i}]")
                for i, r in enumerate(_records(rows, "row"))]
        if not body:
            raise InvalidRequestError("rows array must not be empty")
        return self._post("rows", body={"rows": body}, idempotent=True)["version"]

    def list(self, limit: int | None = None, offset: int | None = None,
             filter: str | None = None,  # noqa: A002 (the reference's name)
             vectors: str = "list") -> list[dict[str, Any]]:
        """Rows (blob columns left out) matching the SQL predicate `filter`, `offset`
        skipped, at most `limit` (the reference passes these by keyword; positions work
        too, as on the embedded store's handle). vectors="numpy": vector columns as numpy
        float32 arrays."""
        if filter is not None and not isinstance(filter, str):
            raise TypeError(f"filter must be a str, found {type(filter).__name__}")
        query = {"limit": _count(limit, "limit"), "offset": _count(offset, "offset"),
                 "filter": filter}
        rows = self._get("rows", query=query)["rows"]
        return self._rows(rows, _vector_format(vectors))

    def get(self, id: str, columns: Iterable[str] | None = None,  # noqa: A002
            vectors: str = "list") -> dict[str, Any] | None:
        """The row with this id or None. Without `columns` every non-blob column; blob
        columns only when named (as base64 text); `id` always; columns=[] checks
        existence."""
        id = _text(id, "id")
        vectors = _vector_format(vectors)
        names = None
        if columns is not None:
            if isinstance(columns, str):
                raise TypeError("columns must be a list of column names, found str")
            names = [_text(c, "column name") for c in columns] or ["id"]
        if names is not None and any("," in n for n in names):
            # ?columns= is comma-separated: ask get-rows, which takes a JSON list.
            rows = self._post("get-rows", body={"ids": [id], "columns": names},
                              idempotent=True)["rows"]
            row = rows[0] if rows else None
        else:
            query = {"columns": ",".join(names)} if names is not None else None
            try:
                row = self._get("rows", id, query=query)
            except NotFoundError as e:
                if not _absent(e, "Row '"):
                    raise
                row = None
        return None if row is None else self._rows([row], vectors)[0]

    def flush(self) -> None:
        """Seals the rows the server's handle buffered (those of every client), making them
        visible."""
        self._post("flush", idempotent=True)

    def cleanup_wal(self) -> int:
        """Merges the flushed generations into the base table now; the number merged."""
        return self._post("merge-wal")["reclaimed"]

    def _rows(self, rows: list[dict], vectors: str) -> list[dict]:
        """Rows as the embedded store gives them: float columns as floats (JSON writes 1.0
        as 1) and, with vectors="numpy", vectors as numpy float32 arrays."""
        if not rows:
            return rows
        floats, vector_columns, float_lists = [], [], []
        for name, t in self.schema().get("columns", []):
            kind = t.get("type") if isinstance(t, Mapping) else None
            if kind in ("float32", "float64"):
                floats.append(name)
            elif kind == "vector":
                vector_columns.append(name)
            elif kind == "list" and (t.get("item") or {}).get("type") in ("float32", "float64"):
                float_lists.append(name)
        np = _numpy() if vectors == "numpy" and vector_columns else None
        for row in rows:
            for name in floats:
                if isinstance(row.get(name), int):
                    row[name] = float(row[name])
            for name in float_lists + vector_columns:
                value = row.get(name)
                if isinstance(value, list):
                    row[name] = [float(v) if isinstance(v, int) else v for v in value]
            if np is not None:
                for name in vector_columns:
                    value = row.get(name)
                    if isinstance(value, list) and all(v is not None for v in value):
                        row[name] = np.asarray(value, dtype=np.float32)
        return rows


def _same_spec(requested: dict, persisted: Any) -> bool:
    """Whether two specs are equal as the server reads them. The requested one is compared
    in the server's canonical form (the spec it would have stored); a spec the server reads
    differently (strata's schema JSON) is compared by what creating it would give."""
    if persisted is None:
        return False
    if requested == persisted:
        return True
    return _canonical(requested) == _canonical(persisted)


def _canonical(spec: Any) -> Any:
    """The spec with the defaults written out (nullable true, string large false, binary
    blob false, vector metric l2 and its aliases), as the server's ToJson would differ only
    in those."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), list):
        return spec

    def type_(t: Any) -> Any:
        if not isinstance(t, Mapping):
            return t
        out = dict(t)
        out.setdefault("nullable", True)
        kind = out.get("type")
        if kind == "string":
            out.setdefault("large", False)
        elif kind == "binary":
            out.setdefault("blob", False)
        elif kind == "vector":
            metric = out.get("metric") or "l2"
            out["metric"] = {"euclidean": "l2", "dot_product": "dot"}.get(metric, metric)
        elif kind == "list":
            item = dict(type_(out.get("item")) or {})
            item.pop("nullable", None)
            out["item"] = item
        return out

    return [[c[0], type_(c[1])] if isinstance(c, list) and len(c) == 2 else c
            for c in spec["columns"]]


# --- Datagen stores --------------------------------------------------------------------------


class RemoteDatagenStore(_RemoteStore):
    """A datagen event log of a `strata serve`: DatagenStore's methods over HTTP, taking the
    same arguments and returning the same values as the embedded strata.DatagenStore (the
    same DatagenStreamWriter, events, folded items, failures, overview and trees; see
    docs/python.md). Appends are visible when they return."""

    _kind = "datagen"
    _title = "Datagen store"

    @classmethod
    def connect(cls, base_url: str, name: str, *, token: str | None = None,
                timeout: float | None = None,
                client: RemoteClient | None = None) -> RemoteDatagenStore:
        """The existing store `name`; NotFoundError when the server has none."""
        return cls._connect(base_url, name, token, timeout, client)

    @classmethod
    def connect_or_create(cls, base_url: str, name: str, *,
                          storage_options: Mapping[str, Any] | None = None,
                          token: str | None = None, timeout: float | None = None,
                          client: RemoteClient | None = None) -> RemoteDatagenStore:
        """The store `name`, created when the server has none."""
        body = {} if storage_options is None else {"storage_options": dict(storage_options)}
        return cls._connect_or_create(base_url, name, token, timeout, client, body)

    # -- writes --

    def append(self, events: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> int:
        """Appends events (one mapping or an iterable of them) in one write, validated as a
        batch (nothing written on an error): the base version. An empty batch writes
        nothing."""
        return self._append(events, checkpoint=False)

    def append_checkpoint(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Appends one checkpoint (one item's field events and their STEP_COMPLETED), visible
        whole or not at all: the base version."""
        return self._append(events, checkpoint=True)

    def _append(self, events: Any, checkpoint: bool) -> int:
        self._check_open()
        # Each event is read as the embedded store reads it (same checks and messages); the
        # batch rules are the server's, which are the engine's.
        body = [_datagen.event_for_http(e, f"events[{i}]")
                for i, e in enumerate(mappings(events, "event"))]
        if not body:
            if checkpoint:
                raise InvalidRequestError("checkpoint batch must not be empty",
                                          status="InvalidArgument")
            return self.version()
        # Event ids identify the rows: a resend collapses into the first copy.
        query = {"checkpoint": "true"} if checkpoint else None
        return self._post("events", body={"events": body}, query=query,
                          idempotent=True)["version"]

    def open_stream(self, item_id: ItemIdArg, *, run_id: str, writer_epoch: str | int,
                    parent_item_id: ItemIdArg | None = None,
                    query_tags: Any = None) -> DatagenStreamWriter:
        """Appends the item's ITEM_CREATED (item_seq 1, status running, `query_tags` any JSON
        value) and returns its writer at item_seq 2, attempt 0. parent_item_id defaults to
        the id's path parent."""
        text_id = _item_id(item_id)
        run_id = text("run_id", run_id)
        writer_epoch = _epoch(writer_epoch)
        parent = None if parent_item_id is None else _item_id(parent_item_id, "parent_item_id")
        item = DatagenItemId.parse(text_id)
        if parent is None and item.parent() is not None:
            parent = str(item.parent())
        handle = _datagen.ClientWriterHandle(
            text_id, root_item_id=str(item.root()), parent_item_id=parent, run_id=run_id,
            writer_epoch=writer_epoch, next_seq=1, attempt=0)
        self.append([handle.item_created(query_tags)])
        return DatagenStreamWriter(handle)

    def resume_stream(self, item_id: ItemIdArg, *, run_id: str,
                      writer_epoch: str | int) -> DatagenStreamWriter | None:
        """A writer continuing the item after its last event (item_seq last + 1, attempt
        last + 1); None when the item never started. Writes nothing."""
        text_id = _item_id(item_id)
        run_id = text("run_id", run_id)
        writer_epoch = _epoch(writer_epoch)
        DatagenItemId.parse(text_id)
        folded = self._get("items", text_id)["item"]
        if folded is None:
            return None
        return DatagenStreamWriter(_datagen.ClientWriterHandle(
            text_id, root_item_id=folded["root_item_id"],
            parent_item_id=folded.get("parent_item_id"), run_id=run_id,
            writer_epoch=writer_epoch, next_seq=folded["last_item_seq"] + 1,
            attempt=folded["last_attempt"] + 1))

    # -- reads --

    def fold_item(self, item_id: ItemIdArg, *, load_blobs: bool = False
                  ) -> dict[str, Any] | None:
        """The item's state folded from its events, or None when it never started.
        load_blobs=True loads blob values' bytes."""
        query = {"load_blobs": "true"} if load_blobs else None
        item = self._get("items", _item_id(item_id), query=query)["item"]
        return None if item is None else _datagen.folded_item(item)

    def overview(self) -> dict[str, Any]:
        """{items, running, completed, filtered (root items by status), failures,
        failures_by_error_type, failures_by_run {run: {failures, failures_by_error_type,
        sample_root_item_ids}}, completed_steps {step_name: n}}."""
        return _datagen.overview(self._get("overview"))

    def root_item_statuses(self, ids: Iterable[ItemIdArg]) -> dict[str, str]:
        """{root id: status} of the given roots; a root that never started is left out."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be an iterable of item ids, found {type(ids).__name__}")
        wanted = [_item_id(i, "ids[]") for i in ids]
        found: dict[str, str] = {}
        plain = sorted({i for i in wanted if "," not in i and i})
        for start in range(0, len(plain), _ROOT_STATUS_BATCH):
            batch = plain[start : start + _ROOT_STATUS_BATCH]
            found.update(self._get("root-status", query={"ids": ",".join(batch)})["statuses"])
        # ?ids= is comma-separated: a root id holding a comma is read through its fold.
        for i in wanted:
            if "," in i and i not in found:
                folded = self._get("items", i)["item"]
                if folded is not None:
                    found[i] = folded["status"]
        # In id order, as the embedded store answers.
        return {i: found[i] for i in sorted(found)}

    def item_failures(self, item_id: ItemIdArg) -> list[dict[str, Any]]:
        """The item's FAILED events in order, each {"at", "run_id", "attempt", "error_type",
        "error_dump"?, "traceback"?}."""
        failures = self._get("items", _item_id(item_id), "failures")["failures"]
        return [_datagen.item_failure(f) for f in failures]

    def get_blob(self, event_id: str) -> bytes | None:
        """The bytes of blob event `event_id`, or None when there is no such blob."""
        return self._bytes_or_none(("blobs", text("event_id", event_id)), "Datagen event '")

    def load_blob(self, folded: Mapping[str, Any], field_name: str) -> bytes | None:
        """The bytes of blob field `field_name` of a folded item (from fold_item), or None
        when the field holds no blob."""
        field_name = text("field_name", field_name)
        event_id = _datagen.blob_event_id(folded, field_name)
        return None if event_id is None else self.get_blob(event_id)

    def item_tree(self, root_item_id: ItemIdArg) -> dict[str, Any]:
        """Every started item under a root, folded and linked: {"roots": [...], "nodes":
        {id: {"item", "children"}}}. (The server has no tree route: the root's events name
        the items, each folded by the server, one request per item.)"""
        root = _item_id(root_item_id, "root_item_id")
        events = self._get("roots", root, "events")["events"]
        folded = {}
        for item_id in sorted({e["item_id"] for e in events}):
            item = self.fold_item(item_id)
            if item is not None:
                folded[item_id] = item
        return _datagen.item_tree(folded)

    def flush(self) -> None:
        """Nothing to do: appends are sealed when they return."""
        self._check_open()


from .remote_context import RemoteContext, SyncRemoteContext  # noqa: E402 (re-export)
