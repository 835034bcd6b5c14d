"""RolloutStore: reinforcement-learning rollouts, lance-context's ``RolloutStore`` API on
strata's C++ engine."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from . import _strata
from ._common import BackedStore, mappings, text, uri_text, version_number

__all__ = ["AddResult", "RolloutStore"]


class AddResult(TypedDict):
    """What :meth:`RolloutStore.add` returns."""

    version: int  # the base version (appends do not advance it)
    ids: list[str]  # the records' ids, generated ones included, in order
    count: int


class RolloutStore(BackedStore):
    """Append-only rows of RL trajectories, keyed by ``id``.

    Open one with :meth:`open`. ``add`` is durable when it returns and visible to reads after
    the next :meth:`flush` (or :meth:`close`). Re-adding an id is allowed: the newest row
    wins. Rows are dicts keyed by the rollout columns (docs/python.md lists them); reads
    return every column but ``binary_payload``, which :meth:`get_blob` reads.

    One store may be shared by any number of threads: every call that does I/O runs without
    the GIL, and concurrent adds share the engine's group commit. Close it with
    :meth:`close` or a ``with`` block; a store dropped without ``close`` seals its rows as
    ``close`` would.
    """

    __slots__ = ()

    def __init__(self, backend: Any) -> None:
        # Not public: use RolloutStore.open. `backend` has the methods of
        # strata._strata.RolloutStoreHandle (add, flush, list, get_trajectory, get, get_blob,
        # checkout, refresh_latest, version, close, closed, uri); a remote store supplies
        # one that speaks HTTP.
        self._backend = backend

    @staticmethod
    def connect(base_url: str, name: str, **kwargs: Any) -> Any:
        """The store ``name`` of the ``strata serve`` at ``base_url``: a
        :class:`strata.remote.RemoteRolloutStore`, with this class's methods over HTTP.
        NotFoundError when the server has none. ``kwargs``: ``token``, ``timeout``."""
        from .remote import RemoteRolloutStore

        return RemoteRolloutStore.connect(base_url, name, **kwargs)

    @staticmethod
    def connect_or_create(base_url: str, name: str, **kwargs: Any) -> Any:
        """As :meth:`connect`, creating the store on the server when it has none."""
        from .remote import RemoteRolloutStore

        return RemoteRolloutStore.connect_or_create(base_url, name, **kwargs)

    @classmethod
    def open(
        cls,
        uri: str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
    ) -> RolloutStore:
        """Opens the rollout store at ``uri``, creating it when missing.

        ``uri`` is a local path, a ``file://`` URI or ``memory://NAME`` (a store in this
        process's memory, shared by every open of the same name). ``storage_options``: for a
        local store ``{"sync": False}`` trades power-loss durability for speed (rows survive
        the process, not the machine); a memory store takes none.
        """
        return cls(_strata.RolloutStoreHandle.open(uri_text(uri), storage_options))

    def version(self) -> int:
        """The base table version this store reads (appends do not advance it)."""
        return self._backend.version()

    def add(self, record_or_records: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> AddResult:
        """Appends one record or many in one durable write.

        A record without ``id`` gets a random UUID (version 4); ``rollout_id`` is required.
        Returns ``{"version", "ids", "count"}``. Bad input raises
        :class:`~strata.errors.InvalidRequestError` naming the record and field, and writes
        nothing.
        """
        return self._backend.add(mappings(record_or_records, "record"))

    def add_one(self, **fields: Any) -> AddResult:
        """``add(fields)``: one record from keyword arguments."""
        return self._backend.add([fields])

    def flush(self) -> None:
        """Makes every row added through this store visible to reads."""
        self._backend.flush()

    def list(
        self,
        limit: int | None = None,
        offset: int | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows in id order, filtered, then ``offset`` skipped and at most ``limit`` returned.

        ``filters`` holds equality filters on ``rollout_id``, ``problem_id``, ``dataset``,
        ``role``, ``content_type``, ``policy_version``, ``artifact_type`` (strings; "" is no
        filter) and ``include_in_training`` (a bool). Any other key is refused.
        """
        return self._backend.list(limit, offset, filters)

    def get_trajectory(self, rollout_id: str) -> list[dict[str, Any]]:
        """The rows of one rollout ordered by ``sequence_order``, then ``id``."""
        return self._backend.get_trajectory(text("rollout_id", rollout_id))

    def get(self, id: str) -> dict[str, Any] | None:  # the reference's name
        """The row with this id (without its blob), or None."""
        return self._backend.get(text("id", id))

    def get_blob(self, id: str) -> bytes | None:
        """The ``binary_payload`` of the row with this id, or None."""
        return self._backend.get_blob(text("id", id))

    def checkout(self, version: int) -> None:
        """Pins reads to base version ``version``; writes are refused until
        :meth:`refresh_latest`."""
        self._backend.checkout(version_number(version))

    def refresh_latest(self) -> None:
        """Unpins a checkout and reads the newest version again."""
        self._backend.refresh_latest()
