"""GenericStore: rows of a schema the user declares, lance-context's ``GenericStore`` API on
strata's C++ engine."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union

from . import _strata
from ._common import BackedStore, mappings, text, uri_text, version_number

__all__ = ["GenericStore", "SchemaArg"]

# A type: a name ("string", "int64", ...) or a mapping ({"type": "vector", "dim": 4}).
ColumnTypeArg = Union[str, Mapping[str, Any]]
# {name: type} in column order, or a full spec {"columns": [[name, type], ...]}.
SchemaArg = Union[Mapping[str, ColumnTypeArg], Mapping[str, Any], str]

VectorFormat = Literal["list", "numpy"]


def _column_type(name: Any, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(
        f"schema column {name!r}: expected a type name or a type mapping, "
        f"found {type(value).__name__}"
    )


def _spec_json(schema: Any) -> str:
    """The spec JSON the engine reads (include/strata/generic_store.h) from the forms
    GenericStore.open takes; the engine checks it."""
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, Mapping):
        raise TypeError(
            "schema must be a mapping of column name to type, or a spec "
            f"{{'columns': [[name, type], ...]}}, found {type(schema).__name__}"
        )
    columns = schema.get("columns")
    if isinstance(columns, (list, tuple)):
        pairs = []
        for index, column in enumerate(columns):
            if not isinstance(column, (list, tuple)) or len(column) != 2:
                raise TypeError(f"schema columns[{index}] must be a [name, type] pair")
            pairs.append([column[0], _column_type(column[0], column[1])])
        spec: dict[str, Any] = {"columns": pairs}
    else:
        spec = {"columns": [[name, _column_type(name, t)] for name, t in schema.items()]}
    return json.dumps(spec)


class GenericStore(BackedStore):
    """Rows of a declared schema keyed by a string ``id`` column.

    The schema is fixed when the store is created and persisted with it, as is the seal mode:
    with ``seal_on_add`` each :meth:`add` is visible when it returns; without it (the
    default) rows become visible at the next :meth:`flush`. Re-adding an id replaces the row
    (the newest wins). Rows are dicts: null values are left out, binary values are base64
    strings, timestamps integer microseconds, vectors lists of floats (or numpy float32
    arrays with ``vectors="numpy"``).

    Thread safety and closing as :class:`~strata.RolloutStore`.
    """

    __slots__ = ()

    def __init__(self, backend: Any) -> None:
        # Not public: use GenericStore.open or open_existing. `backend` has the methods of
        # strata._strata.GenericStoreHandle.
        self._backend = backend

    @staticmethod
    def connect(base_url: str, name: str, **kwargs: Any) -> Any:
        """The store ``name`` of the ``strata serve`` at ``base_url``: a
        :class:`strata.remote.RemoteGenericStore`, with this class's methods over HTTP.
        NotFoundError when the server has none. ``kwargs``: ``token``, ``timeout``."""
        from .remote import RemoteGenericStore

        return RemoteGenericStore.connect(base_url, name, **kwargs)

    @staticmethod
    def connect_or_create(base_url: str, name: str, schema: Any, **kwargs: Any) -> Any:
        """As :meth:`connect`, creating the store on the server when it has none."""
        from .remote import RemoteGenericStore

        return RemoteGenericStore.connect_or_create(base_url, name, schema, **kwargs)

    @classmethod
    def open(
        cls,
        uri: str | os.PathLike[str],
        schema: SchemaArg,
        *,
        storage_options: Mapping[str, Any] | None = None,
        seal_on_add: bool = False,
    ) -> GenericStore:
        """Opens the store at ``uri``, creating it with ``schema`` when missing; an existing
        store must have been created with the same schema.

        ``schema`` maps column names to types, in order: a type name (``"string"``,
        ``"int32"``, ``"int64"``, ``"float32"``, ``"float64"``, ``"bool"``, ``"timestamp"``,
        ``"binary"``) or a mapping (``{"type": "vector", "dim": 4, "metric": "cosine"}``,
        ``{"type": "list", "item": {"type": "string"}}``, ``{"type": "binary", "blob":
        True}``, ``{"type": "string", "nullable": False}``). The ``id`` column is required: a
        string that is not nullable. A full spec ``{"columns": [[name, type], ...]}`` is
        taken too. ``uri`` and ``storage_options`` as for :meth:`RolloutStore.open`.
        """
        return cls(
            _strata.GenericStoreHandle.open(
                uri_text(uri), _spec_json(schema), storage_options, bool(seal_on_add)
            )
        )

    @classmethod
    def open_existing(
        cls,
        uri: str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
        seal_on_add: bool = False,
    ) -> GenericStore:
        """Opens an existing store with its persisted schema; never creates one
        (:class:`~strata.errors.NotFoundError`). The store keeps the seal mode it was created
        with; ``seal_on_add`` is accepted for compatibility."""
        return cls(
            _strata.GenericStoreHandle.open(
                uri_text(uri), None, storage_options, bool(seal_on_add)
            )
        )

    def schema(self) -> dict[str, Any]:
        """The declared schema as a spec: ``{"columns": [[name, {"type": ...}], ...]}``."""
        return self._backend.schema()

    def version(self) -> int:
        """The base table version this store reads (appends do not advance it)."""
        return self._backend.version()

    def add(self, rows: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> int:
        """Appends rows (one mapping or an iterable of them) in one durable write; returns the
        base version. Values: as the schema declares (bytes-like or base64 strings for binary,
        integer microseconds, RFC 3339 strings or aware datetimes for timestamps, lists or
        numpy arrays for vectors and lists). A key the schema does not declare, a missing
        non-nullable column or a value of the wrong type raises
        :class:`~strata.errors.InvalidRequestError` and writes nothing."""
        return self._backend.add(mappings(rows, "row"))

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        filter: str | None = None,  # the reference's name
        vectors: VectorFormat = "list",
    ) -> list[dict[str, Any]]:
        """Rows in id order without their blob columns, filtered by ``filter`` (an
        expression: ``"score > 0.5 AND user = 'u1'"``, docs/expressions.md), then ``offset``
        skipped and at most ``limit`` returned."""
        return self._backend.list(limit, offset, filter, vectors)

    def get(
        self,
        id: str,
        *,
        columns: Iterable[str] | None = None,
        vectors: VectorFormat = "list",
    ) -> dict[str, Any] | None:
        """The row with this id, or None: every non-blob column, or only ``columns`` (blob
        columns are read only when named; ``id`` is always included)."""
        names = None if columns is None else [text("columns[]", c) for c in columns]
        return self._backend.get(text("id", id), names, vectors)

    def flush(self) -> None:
        """Makes every row added through this store visible to reads."""
        self._backend.flush()

    def cleanup_wal(self) -> int:
        """Seals, then folds this store's pending generations into the base table; returns how
        many generations it reclaimed."""
        return self._backend.cleanup_wal()

    def checkout(self, version: int) -> None:
        """Pins reads to base version ``version``; writes are refused until
        :meth:`refresh_latest`."""
        self._backend.checkout(version_number(version))

    def refresh_latest(self) -> None:
        """Unpins a checkout and reads the newest version again."""
        self._backend.refresh_latest()

    @property
    def seal_on_add(self) -> bool:
        """The store's seal mode (persisted when it was created)."""
        return self._backend.seal_on_add()
