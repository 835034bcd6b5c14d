"""Async twins: AsyncRolloutStore and AsyncContext wrap any object with the sync methods (an
embedded store or a remote one) and run each call that does I/O in an executor, off the
event loop (lance-context §5.2, §5.3).

    store = await AsyncRolloutStore.connect_or_create("http://127.0.0.1:3000", "exp1")
    await store.add({"rollout_id": "traj-1", "content": "hi"})
    rows = await store.get_trajectory("traj-1")

The wrapped object must be safe to call from several threads at once (strata's stores are).
`executor` is a concurrent.futures.Executor; None uses the event loop's default one.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

__all__ = ["AsyncContext", "AsyncRolloutStore"]


class _AsyncWrapper:
    """Runs the wrapped object's methods in an executor."""

    __slots__ = ("_sync", "_executor")

    def __init__(self, sync: Any, *, executor: Executor | None = None) -> None:
        self._sync = sync
        self._executor = executor

    @property
    def sync(self) -> Any:
        """The wrapped object, for calls from outside the event loop."""
        return self._sync

    async def _run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await _in_executor(self._executor, getattr(self._sync, method), *args, **kwargs)

    def close(self) -> None:
        close = getattr(self._sync, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        """close() off the event loop (an embedded store seals its rows when it closes)."""
        close = getattr(self._sync, "close", None)
        if close is not None:
            await _in_executor(self._executor, close)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._sync!r})"


async def _in_executor(executor: Executor | None, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    loop = asyncio.get_running_loop()
    # The call sees the caller's context variables, as asyncio.to_thread does.
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(executor, call)


def _embedded(name: str) -> Any:
    """The embedded class `name` of the strata package (it needs the compiled extension)."""
    cls = getattr(importlib.import_module(__package__), name, None)
    if cls is None:
        raise ImportError(f"strata.{name} is not available: the embedded classes need the "
                          "compiled extension (strata._strata)")
    return cls


class AsyncRolloutStore(_AsyncWrapper):
    """A RolloutStore whose calls run off the event loop. Wraps an embedded
    strata.RolloutStore, a RemoteRolloutStore, or any object with their methods."""

    __slots__ = ()

    @classmethod
    async def connect(cls, base_url: str, name: str, *, executor: Executor | None = None,
                      **kwargs: Any) -> AsyncRolloutStore:
        """The existing remote store `name` (RemoteRolloutStore.connect)."""
        from .remote import RemoteRolloutStore

        store = await _in_executor(executor, RemoteRolloutStore.connect, base_url, name,
                                   **kwargs)
        return cls(store, executor=executor)

    @classmethod
    async def connect_or_create(cls, base_url: str, name: str, *,
                                storage_options: dict[str, Any] | None = None,
                                executor: Executor | None = None,
                                **kwargs: Any) -> AsyncRolloutStore:
        """The remote store `name`, created when missing (RemoteRolloutStore
        .connect_or_create)."""
        from .remote import RemoteRolloutStore

        store = await _in_executor(executor, RemoteRolloutStore.connect_or_create, base_url,
                                   name, storage_options=storage_options, **kwargs)
        return cls(store, executor=executor)

    @classmethod
    async def open(cls, uri: str, *, executor: Executor | None = None,
                   **kwargs: Any) -> AsyncRolloutStore:
        """The embedded store at `uri` (strata.RolloutStore.open)."""
        store = await _in_executor(executor, _embedded("RolloutStore").open, uri, **kwargs)
        return cls(store, executor=executor)

    def version(self) -> int:
        return self._sync.version()

    async def add(self, record_or_records: Any) -> dict[str, Any]:
        return await self._run("add", record_or_records)

    async def add_one(self, **fields: Any) -> dict[str, Any]:
        return await self._run("add_one", **fields)

    async def flush(self) -> None:
        return await self._run("flush")

    async def list(self, limit: int | None = None, offset: int | None = None,
                   filters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return await self._run("list", limit, offset, filters)

    async def get_trajectory(self, rollout_id: str) -> list[dict[str, Any]]:
        return await self._run("get_trajectory", rollout_id)

    async def get(self, id: str) -> dict[str, Any] | None:  # noqa: A002
        return await self._run("get", id)

    async def get_blob(self, id: str) -> bytes | None:  # noqa: A002
        return await self._run("get_blob", id)

    async def checkout(self, version: int) -> None:
        return await self._run("checkout", version)


class AsyncContext(_AsyncWrapper):
    """A Context whose calls run off the event loop: AsyncContext(sync_ctx) wraps an embedded
    strata.Context, a SyncRemoteContext, or any object with their methods. uri, branch,
    entries, version, snapshot and fork stay synchronous (fork wraps the fork)."""

    __slots__ = ()

    @classmethod
    async def create(cls, uri: str, *, executor: Executor | None = None,
                     **kwargs: Any) -> AsyncContext:
        """The embedded context at `uri` (strata.Context.create)."""
        ctx = await _in_executor(executor, _embedded("Context").create, uri, **kwargs)
        return cls(ctx, executor=executor)

    # -- synchronous --

    def uri(self) -> str:
        return self._sync.uri()

    def branch(self) -> str:
        return self._sync.branch()

    def entries(self) -> int:
        return self._sync.entries()

    def version(self) -> int:
        return self._sync.version()

    def snapshot(self, label: str | None = None) -> str:
        return self._sync.snapshot(label)

    def fork(self, branch_name: str) -> AsyncContext:
        return type(self)(self._sync.fork(branch_name), executor=self._executor)

    # -- asynchronous: each the sync method of the same name, with the same arguments --

    async def add(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run("add", *args, **kwargs)

    async def add_many(self, records: Any) -> Any:
        return await self._run("add_many", records)

    async def upsert(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return await self._run("upsert", *args, **kwargs)

    async def upsert_many(self, records: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._run("upsert_many", records, **kwargs)

    async def update(self, **kwargs: Any) -> dict[str, Any]:
        return await self._run("update", **kwargs)

    async def checkout(self, version_id: int) -> None:
        return await self._run("checkout", version_id)

    async def search(self, query: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._run("search", query, *args, **kwargs)

    async def retrieve(self, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._run("retrieve", **kwargs)

    async def related(self, target_id: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._run("related", target_id, *args, **kwargs)

    async def migrate_relationships(self) -> bool:
        return await self._run("migrate_relationships")

    async def get(self, **kwargs: Any) -> dict[str, Any] | None:
        return await self._run("get", **kwargs)

    async def get_blob(self, id: str) -> bytes | None:  # noqa: A002
        return await self._run("get_blob", id)

    async def fetch_payload(self, id: str) -> bytes | None:  # noqa: A002
        return await self._run("fetch_payload", id)

    async def put_payload(self, uri: str, data: bytes) -> int:
        return await self._run("put_payload", uri, data)

    async def list(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._run("list", *args, **kwargs)

    async def delete(self, **kwargs: Any) -> bool:
        return await self._run("delete", **kwargs)

    async def forget(self, **kwargs: Any) -> bool:
        return await self._run("forget", **kwargs)

    async def compact(self, **kwargs: Any) -> dict[str, int]:
        return await self._run("compact", **kwargs)

    async def compaction_stats(self) -> dict[str, Any]:
        return await self._run("compaction_stats")
