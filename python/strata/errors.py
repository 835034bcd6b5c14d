"""The exceptions strata raises for failed store operations.

Every error a store reports is a :class:`ContextStoreError` (a ``RuntimeError``), with the
subclasses lance-context's Python API has, so code written against it catches the same
classes::

    ContextStoreError (RuntimeError)
    ├── NotFoundError              a store, version or row that does not exist
    ├── AlreadyExistsError         something that must be new already exists
    ├── InvalidRequestError        bad input, nothing written (also a ValueError)
    ├── InternalError              the store failed (I/O, corruption, ...); retryable
    │   ├── FencedError            another writer claimed this handle's shard
    │   ├── BusyError              a conflict that a retry resolves; retryable
    │   └── UnavailableError       refused for now (too many pending generations); retryable
    └── CompactionInProgressError  a compaction of this handle is already running; retryable

``code`` is the error code the HTTP API (``strata serve``) answers with for the same failure,
``retryable`` whether the same call may succeed later, and ``status`` the engine's status code
name ("NotFound", "Corruption", ...) when the engine raised it (None when the Python layer
did).
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "BusyError",
    "CompactionInProgressError",
    "ContextStoreError",
    "FencedError",
    "InternalError",
    "InvalidRequestError",
    "NotFoundError",
    "UnavailableError",
]


class ContextStoreError(RuntimeError):
    """Root of the errors of store operations."""

    code: str = "INTERNAL"
    retryable: bool = False

    def __init__(self, message: str, *, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFoundError(ContextStoreError):
    """The store, version or row does not exist."""

    code = "NOT_FOUND"


class AlreadyExistsError(ContextStoreError):
    """Something that must be new already exists."""

    code = "ALREADY_EXISTS"


class InvalidRequestError(ContextStoreError, ValueError):
    """Bad input (a value of the wrong type, an unknown filter, a bad schema); nothing was
    written. Also a ``ValueError``."""

    code = "INVALID_REQUEST"


class InternalError(ContextStoreError):
    """The store failed: I/O, a corrupt file, an aborted operation."""

    code = "INTERNAL"
    retryable = True


class FencedError(InternalError):
    """Another writer (handle or process) claimed this handle's shard. What this handle had
    acknowledged is safe; its next write claims the shard back."""

    retryable = False


class BusyError(InternalError):
    """A conflict with concurrent work (a read that kept racing merges); retry."""

    code = "OVERLOADED"
    retryable = True


class UnavailableError(InternalError):
    """Refused for now, e.g. reads past the pending-generation cap; retry after merges."""

    code = "OVERLOADED"
    retryable = True


class CompactionInProgressError(ContextStoreError):
    """A compaction of this handle is already running."""

    code = "COMPACTION_IN_PROGRESS"
    retryable = True
