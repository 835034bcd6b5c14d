"""strata.replicate: incremental replication of a store as verified, chained bundles
(docs/replication.md), the Python face of ``strata replicate``.

    from strata import replicate

    replicate.mark_base("/data/src", "nightly")               # once: the chain's base state
    report = replicate.export_changes("/data/src", "/data/bundles", full=True)
    replicate.apply_changes("/data/replica", "/data/bundles")  # every bundle that continues it
    assert replicate.verify("/data/replica")["matches"]

A bundle that does not continue the replica's state, was altered, or belongs to another
chain is refused before anything is installed, with a :class:`RefusedError` subclass named
after the refusal (:class:`CursorRefusedError`, :class:`DigestRefusedError`, ...).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

from . import _strata
from ._common import uri_text
from .errors import BusyError, ContextStoreError

__all__ = [
    "BusyRefusedError",
    "CursorRefusedError",
    "DigestRefusedError",
    "DivergedRefusedError",
    "ExistsRefusedError",
    "NotMarkedRefusedError",
    "RefusedError",
    "SchemaRefusedError",
    "TooOldRefusedError",
    "apply_changes",
    "export_changes",
    "mark_base",
    "verify",
]


class RefusedError(ContextStoreError):
    """A bundle or an export was refused; nothing was installed or published. ``kind`` is
    the refusal's name ("Cursor", "Digest", ...)."""

    kind = ""


class CursorRefusedError(RefusedError):
    """Out of order or replayed: the bundle does not start at the replica's state."""

    kind = "Cursor"


class DivergedRefusedError(RefusedError):
    """Another chain or re-marked base, or the replica was changed outside apply."""

    kind = "Diverged"


class DigestRefusedError(RefusedError):
    """The bundle's bytes were altered or damaged (or its key does not verify)."""

    kind = "Digest"


class SchemaRefusedError(RefusedError):
    """The bundle's schema differs from the replica's."""

    kind = "Schema"


class TooOldRefusedError(RefusedError):
    """The state is below the source's trim floor: re-seed with a full export."""

    kind = "TooOld"


class ExistsRefusedError(RefusedError):
    """A bundle of that name is already published."""

    kind = "Exists"


class BusyRefusedError(RefusedError, BusyError):
    """Another apply advanced the replica while this one ran."""

    kind = "Busy"


class NotMarkedRefusedError(RefusedError):
    """The source has no replication chain: mark a base first."""

    kind = "NotMarked"


_REFUSALS = {
    cls.kind: cls
    for cls in (
        CursorRefusedError,
        DivergedRefusedError,
        DigestRefusedError,
        SchemaRefusedError,
        TooOldRefusedError,
        ExistsRefusedError,
        BusyRefusedError,
        NotMarkedRefusedError,
    )
}
_REFUSED = re.compile(r"refused \((\w+)\): ")
T = TypeVar("T")


def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except ContextStoreError as e:
        match = _REFUSED.search(str(e))
        cls = _REFUSALS.get(match.group(1)) if match else None
        if cls is None:
            raise
        raise cls(str(e), status=getattr(e, "status", None)) from None


def mark_base(uri: str | os.PathLike[str], token: str, *, replace: bool = False) -> dict:
    """Fixes the base state of a new replication chain on the store at ``uri``. A marked
    store refuses a second mark (AlreadyExistsError) unless ``replace``, which starts a new
    chain that replicas of the old one refuse (re-seed them with a full export)."""
    return _call(_strata.replication_mark_base, uri_text(uri), token, replace)


def export_changes(
    uri: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    since: int | None = None,
    full: bool = False,
    consumer: str = "",
    max_rows: int = 100_000,
    max_bytes: int = 64 << 20,
    hmac_secret: str = "",
) -> dict:
    """Publishes the net change of the store at ``uri`` since chain state ``since`` (the
    newest when None; everything with ``full``) as bundles in the directory ``destination``
    (a path or memory:// name). Returns the report: ``chain_id``, ``from`` / ``to`` states,
    ``bundles`` (key, digest, bytes), ``rows``, ``deletions``, ``bytes``."""
    return _call(
        _strata.replication_export,
        uri_text(uri),
        uri_text(destination),
        since,
        full,
        consumer,
        max_rows,
        max_bytes,
        hmac_secret,
    )


def apply_changes(
    replica: str | os.PathLike[str],
    bundle: bytes | str | os.PathLike[str],
    *,
    hmac_secret: str = "",
    create_if_missing: bool = True,
) -> dict:
    """Installs bundles on the replica at ``replica``. ``bundle`` is one bundle's bytes, the
    path of a bundle file, or a bundle directory (then every published bundle that continues
    the replica's state is applied in order: returns ``{applied, rows, deletions, bytes,
    state}``). One bundle returns ``{from, to, rows, deletions, bytes, replica_version}``."""
    target = uri_text(replica)
    if isinstance(bundle, (bytes, bytearray, memoryview)):
        return _call(_strata.replication_apply, target, bundle, hmac_secret, create_if_missing)
    where = uri_text(bundle)
    if os.path.isfile(where):
        with open(where, "rb") as f:
            data = f.read()
        return _call(_strata.replication_apply, target, data, hmac_secret, create_if_missing)
    return _call(
        _strata.replication_apply_published, target, where, hmac_secret, create_if_missing
    )


def verify(uri: str | os.PathLike[str]) -> dict:
    """Recomputes the store's content checksum and compares it with the one its chain state
    records: ``{matches, computed, recorded, state, version, rows}``."""
    return _call(_strata.replication_verify, uri_text(uri))
