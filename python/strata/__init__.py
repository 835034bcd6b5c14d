"""strata: storage for the data AI agents and their training loops produce, on a C++ engine.

The classes follow lance-context's Python API (same names, parameters and result shapes), so
a program ports with an import change::

    import strata

    with strata.RolloutStore.open("/tmp/rollouts") as store:
        store.add({"rollout_id": "traj-1", "content": "the answer is 42", "reward": 1.0})
        store.flush()
        rows = store.list(filters={"rollout_id": "traj-1"})

Store URIs are local paths, ``file://`` URIs or ``memory://NAME``. Errors are
:class:`~strata.errors.ContextStoreError` subclasses (:mod:`strata.errors`).
"""

from __future__ import annotations

from ._strata import __version__
from .datagen import (
    DatagenItemId,
    DatagenStore,
    DatagenStreamWriter,
    datagen_event_id,
    generate_id,
)
from .errors import (
    AlreadyExistsError,
    BusyError,
    CompactionInProgressError,
    ContextStoreError,
    FencedError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)
from .context import Context, EmbeddingProvider
from .generic import GenericStore
from .namespace import ContextNamespace
from .aio import AsyncContext, AsyncRolloutStore
from .remote_context import RemoteContext
from . import replicate
from .rollout import RolloutStore

__all__ = [
    "AlreadyExistsError",
    "AsyncContext",
    "AsyncRolloutStore",
    "BusyError",
    "CompactionInProgressError",
    "Context",
    "ContextNamespace",
    "ContextStoreError",
    "DatagenItemId",
    "DatagenStore",
    "DatagenStreamWriter",
    "EmbeddingProvider",
    "FencedError",
    "GenericStore",
    "InternalError",
    "InvalidRequestError",
    "NotFoundError",
    "RemoteContext",
    "RolloutStore",
    "UnavailableError",
    "__version__",
    "datagen_event_id",
    "generate_id",
]
