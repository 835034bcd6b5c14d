"""DatagenStore: the checkpoint event log of data-generation pipelines, lance-context's
``DatagenStore`` / ``DatagenStreamWriter`` / ``DatagenItemId`` API on strata's C++ engine."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union

from . import _strata
from ._common import BackedStore, mappings, text, uri_text

__all__ = [
    "DatagenItemId",
    "DatagenStore",
    "DatagenStreamWriter",
    "datagen_event_id",
    "generate_id",
]

#: An item's id: the root item's source key, then one ``step:index`` segment per fan-out
#: (``"5/expand:0/judge:1"``). ``DatagenItemId.from_source_key("5")`` makes a root,
#: ``.child("expand", 0)`` a sub-item; ``parent()``, ``root()``, ``origin_step()``,
#: ``branch_idx()`` and ``is_root()`` take one apart, ``DatagenItemId.parse(text)`` reads one
#: back (``DatagenItemId(text)`` too). An id equals its text (``str(id)``) and hashes as it.
DatagenItemId = _strata.DatagenItemId

ItemIdArg = Union[str, "_strata.DatagenItemId"]
Event = dict[str, Any]


def datagen_event_id(item_id: ItemIdArg, checkpoint_id: str, ordinal: int) -> str:
    """The idempotent id of an event: UUIDv5 over ``item_id``, ``checkpoint_id`` and
    ``ordinal`` (NUL-separated), hyphenated. A retried checkpoint derives the same ids, so its
    copies collapse in the store."""
    return _strata.datagen_event_id(
        _item_id(item_id), text("checkpoint_id", checkpoint_id), ordinal
    )


def generate_id() -> str:
    """A fresh time-ordered id (UUIDv7); the ids one process draws strictly increase. Handy
    for run ids and writer epochs."""
    return _strata.generate_id()


def _item_id(value: Any, name: str = "item_id") -> str:
    if isinstance(value, _strata.DatagenItemId):
        return str(value)
    return text(name, value)


def _optional_text(name: str, value: Any) -> str | None:
    return None if value is None else text(name, value)


class DatagenStreamWriter:
    """One item's writer: derives the bookkeeping every event needs (``item_seq``,
    ``attempt``, checkpoint and event ids) and returns the events for the caller to append —
    it never writes. Get one from :meth:`DatagenStore.open_stream` or
    :meth:`DatagenStore.resume_stream`::

        writer = store.open_stream("5", run_id="run-1", writer_epoch=generate_id())
        store.append_checkpoint(writer.step_completed(position, fields))
        store.append([writer.item_terminal("completed")])

    Each call advances the writer as if its events were appended, so a failed append is
    retried with the very same events (same ids: the copies collapse). A position is
    ``{"step_name", "step_kind", "index", "enclosing"?, "selector"?}``; a field
    ``{"name", "value": {"kind", "value"}, "op"?: "set" | "append", "field_type"?,
    "codec_version"?}``. Bad input raises :class:`~strata.errors.InvalidRequestError` and
    leaves the writer as it was. Not for concurrent use by several threads.

    The writers of a :class:`strata.remote.RemoteDatagenStore` are of this class too and
    build the same events.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: Any) -> None:
        # Not public: the stores' open_stream and resume_stream make writers. `handle` is a
        # strata._strata.DatagenStreamWriterHandle (embedded store) or a
        # strata._datagen.ClientWriterHandle (remote store), which build the same events.
        self._handle = handle

    @property
    def item_id(self) -> str:
        return self._handle.item_id

    @property
    def attempt(self) -> int:
        """0 for a fresh stream; one more than the item's last attempt for a resumed one."""
        return self._handle.attempt

    @property
    def next_seq(self) -> int:
        """The ``item_seq`` of the next event this writer builds."""
        return self._handle.next_seq

    def step_started(self, position: Mapping[str, Any]) -> Event:
        """A STEP_STARTED event (driver steps: sequence, loop); append it with
        :meth:`DatagenStore.append`."""
        return self._handle.step_started(position)

    def step_completed(
        self, position: Mapping[str, Any], fields: Iterable[Mapping[str, Any]]
    ) -> list[Event]:
        """One checkpoint: a FIELD_SET or FIELD_APPEND event per field, then STEP_COMPLETED;
        append it whole with :meth:`DatagenStore.append_checkpoint`."""
        return self._handle.step_completed(position, _field_list(fields))

    def item_terminal(self, status: Literal["completed", "filtered"]) -> Event:
        """The TERMINAL event that ends the item as ``"completed"`` or ``"filtered"``."""
        return self._handle.item_terminal(text("status", status))

    def item_failed(
        self,
        position: Mapping[str, Any],
        error_type: str,
        *,
        error_dump: str | None = None,
        traceback: str | None = None,
    ) -> Event:
        """A FAILED event at ``position``. It records the failure and does not end the item:
        the item still folds as running, and :meth:`DatagenStore.item_failures` lists it."""
        return self._handle.item_failed(
            position,
            text("error_type", error_type),
            _optional_text("error_dump", error_dump),
            _optional_text("traceback", traceback),
        )

    def __repr__(self) -> str:
        return (
            f"DatagenStreamWriter(item_id={self.item_id!r}, attempt={self.attempt}, "
            f"next_seq={self.next_seq})"
        )


def _field_list(fields: Any) -> Any:
    if isinstance(fields, (list, tuple)):
        return fields
    if isinstance(fields, (str, bytes, Mapping)) or not isinstance(fields, Iterable):
        raise TypeError(
            f"fields must be an iterable of field mappings, found {type(fields).__name__}"
        )
    return list(fields)


class DatagenStore(BackedStore):
    """An append-only log of data-generation events. An item's state is never stored: it is
    the fold of its events (:meth:`fold_item`), which is what a pipeline resumes from after a
    crash, and what :meth:`overview`, :meth:`item_failures` and :meth:`item_tree` summarise.

    Events are dicts keyed by the log's columns (docs/python.md); build them with a
    :class:`DatagenStreamWriter` rather than by hand. Appends are durable and visible when
    they return, and a checkpoint (:meth:`append_checkpoint`) is visible whole or not at all.

    One store may be shared by any number of threads: every call that does I/O runs without
    the GIL. Close it with :meth:`close` or a ``with`` block; a store dropped without
    ``close`` is closed as ``close`` would.
    """

    __slots__ = ()

    def __init__(self, backend: Any) -> None:
        # Not public: use DatagenStore.open. `backend` has the methods of
        # strata._strata.DatagenStoreHandle.
        self._backend = backend

    @staticmethod
    def connect(base_url: str, name: str, **kwargs: Any) -> Any:
        """The store ``name`` of the ``strata serve`` at ``base_url``: a
        :class:`strata.remote.RemoteDatagenStore`, with this class's methods over HTTP.
        NotFoundError when the server has none. ``kwargs``: ``token``, ``timeout``."""
        from .remote import RemoteDatagenStore

        return RemoteDatagenStore.connect(base_url, name, **kwargs)

    @staticmethod
    def connect_or_create(base_url: str, name: str, **kwargs: Any) -> Any:
        """As :meth:`connect`, creating the store on the server when it has none."""
        from .remote import RemoteDatagenStore

        return RemoteDatagenStore.connect_or_create(base_url, name, **kwargs)

    @classmethod
    def open(
        cls,
        uri: str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
        shard_id: str | None = None,
    ) -> DatagenStore:
        """Opens the datagen store at ``uri``, creating it when missing.

        ``uri`` and ``storage_options`` as for :meth:`~strata.RolloutStore.open`.
        ``shard_id`` names this writer: processes that write the same store at once must
        each pass a distinct one (the default shard is shared, and two writers of one shard
        fence each other).
        """
        return cls(
            _strata.DatagenStoreHandle.open(
                uri_text(uri), storage_options, _optional_text("shard_id", shard_id)
            )
        )

    def version(self) -> int:
        """The base table version this store reads (appends do not advance it)."""
        return self._backend.version()

    def append(self, events: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> int:
        """Appends events (one mapping or an iterable of them) in one durable write and
        returns the base version. Every event is checked first; an invalid one, an
        ``event_id`` reused with different content or two events of one item at the same
        ``item_seq`` raise :class:`~strata.errors.InvalidRequestError` and nothing is written.
        Appending an identical event again changes nothing. An empty batch writes nothing."""
        return self._backend.append(mappings(events, "event"))

    def append_checkpoint(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Appends one step's checkpoint — its FIELD_SET / FIELD_APPEND events and exactly one
        STEP_COMPLETED, all of one item, checkpoint, run, writer epoch and attempt — so that
        readers see all of it or none of it. Returns the base version."""
        return self._backend.append_checkpoint(mappings(events, "event"))

    def fold_item(self, item_id: ItemIdArg, *, load_blobs: bool = False) -> dict[str, Any] | None:
        """The item's state folded from its events, or None when it never started (no
        ITEM_CREATED). Blob fields carry their bytes only with ``load_blobs`` (else
        :meth:`load_blob` fetches them)."""
        return self._backend.fold_item(_item_id(item_id), bool(load_blobs))

    def overview(self) -> dict[str, Any]:
        """Counts over the whole log: root items by status (a root whose last attempt failed
        counts as running), failures by error type and by run, completed steps by name."""
        return self._backend.overview()

    def root_item_statuses(self, ids: Iterable[ItemIdArg]) -> dict[str, str]:
        """``{root_item_id: status}`` of the given roots; a root that never started is left
        out."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be an iterable of item ids, found {type(ids).__name__}")
        return self._backend.root_item_statuses([_item_id(i, "ids[]") for i in ids])

    def item_failures(self, item_id: ItemIdArg) -> list[dict[str, Any]]:
        """The item's FAILED events in order, each ``{"at", "run_id", "attempt",
        "error_type", "error_dump"?, "traceback"?}``."""
        return self._backend.item_failures(_item_id(item_id))

    def get_blob(self, event_id: str) -> bytes | None:
        """The bytes of blob event ``event_id``, or None."""
        return self._backend.get_blob(text("event_id", event_id))

    def load_blob(self, folded: Mapping[str, Any], field_name: str) -> bytes | None:
        """The bytes of blob field ``field_name`` of a folded item (from :meth:`fold_item`),
        or None when the field holds no blob."""
        return self._backend.load_blob(folded, text("field_name", field_name))

    def item_tree(self, root_item_id: ItemIdArg) -> dict[str, Any]:
        """Every started item under ``root_item_id``, folded and linked:
        ``{"roots": [id, ...], "nodes": {id: {"item": folded, "children": [id, ...]}}}``."""
        return self._backend.item_tree(_item_id(root_item_id, "root_item_id"))

    def open_stream(
        self,
        item_id: ItemIdArg,
        *,
        run_id: str,
        writer_epoch: str,
        parent_item_id: ItemIdArg | None = None,
        query_tags: Any = None,
    ) -> DatagenStreamWriter:
        """Starts an item: appends its ITEM_CREATED (with ``query_tags``, any JSON value) and
        returns the writer of its next events (attempt 0). ``parent_item_id`` defaults to the
        id's path parent. Opening an item again re-appends the same ITEM_CREATED, which
        changes nothing."""
        parent = None if parent_item_id is None else _item_id(parent_item_id, "parent_item_id")
        handle = self._backend.open_stream(
            _item_id(item_id),
            text("run_id", run_id),
            _epoch(writer_epoch),
            parent,
            query_tags,
        )
        return DatagenStreamWriter(handle)

    def resume_stream(
        self, item_id: ItemIdArg, *, run_id: str, writer_epoch: str
    ) -> DatagenStreamWriter | None:
        """A writer that continues a started item after its last event, as the next attempt
        (its events carry ``run_id`` and ``writer_epoch``); None when the item never started.
        Writes nothing."""
        handle = self._backend.resume_stream(
            _item_id(item_id), text("run_id", run_id), _epoch(writer_epoch)
        )
        return None if handle is None else DatagenStreamWriter(handle)

    def close(self) -> None:
        """Releases the store. Later calls raise :class:`~strata.errors.InvalidRequestError`;
        closing again does nothing. Writers stay usable (they never write)."""
        self._backend.close()


def _epoch(value: Any) -> str:
    # An int is taken as its decimal text, as the HTTP API takes writer_epoch.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text("writer_epoch", value)
