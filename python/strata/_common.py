"""Argument checks shared by the store classes."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from .errors import InvalidRequestError


def uri_text(uri: str | os.PathLike[str]) -> str:
    if isinstance(uri, (str, os.PathLike)):
        return os.fspath(uri)
    raise TypeError(f"uri must be a str or a path, found {type(uri).__name__}")


def text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, found {type(value).__name__}")
    return value


def version_number(version: Any) -> int:
    try:
        number = operator.index(version)
    except TypeError:
        raise TypeError(f"version must be an int, found {type(version).__name__}") from None
    if isinstance(version, bool):
        raise TypeError("version must be an int, found bool")
    if number < 0:
        raise InvalidRequestError(f"version must not be negative, found {number}")
    return number


def mappings(value: Any, what: str) -> list[Any]:
    """A record (a mapping) or an iterable of records, as a list (the list itself when it is
    one, without a copy)."""
    if type(value) is list:
        return value
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(
            f"expected a {what} (a mapping) or an iterable of them, "
            f"found {type(value).__name__}"
        )
    return list(value)


class BackedStore:
    """What the store classes share: a backend (the extension's handle, or a remote one with
    the same methods), ``close``, ``closed``, ``uri``, ``with`` blocks and the repr."""

    __slots__ = ("_backend",)

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def close(self) -> None:
        """Seals what this store added and releases it. Later calls raise
        :class:`~strata.errors.InvalidRequestError`; closing again does nothing."""
        self._backend.close()

    @property
    def closed(self) -> bool:
        return self._backend.closed

    @property
    def uri(self) -> str:
        return self._backend.uri

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " (closed)" if self.closed else ""
        return f"{type(self).__name__}({self.uri!r}){state}"
