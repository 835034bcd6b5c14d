"""ContextNamespace: one root location partitioned into Contexts by selector fields
(lance-context §5.2), e.g. a Context per (tenant, bot_id)."""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from collections.abc import Iterable
from typing import Any

from ._common import uri_text
from .context import Context
from .errors import InvalidRequestError

__all__ = ["ContextNamespace"]

_MANIFEST = "_namespace.json"
_SELECTOR_FIELDS = ("tenant", "source", "bot_id", "session_id")
# memory:// namespaces keep their manifests here (the stores live in the memory registry).
_memory_manifests: dict[str, dict[str, Any]] = {}
_memory_lock = threading.Lock()


class ContextNamespace:
    """Contexts under one root, one per combination of the selector ``fields`` (any of
    tenant, source, bot_id, session_id). ``context(**selector)`` opens (creating) the
    partition's Context, whose adds default those fields to the selector's values. The root's
    manifest (``_namespace.json``) records the fields and the partitions made so far.
    """

    def __init__(self, root_uri: str | os.PathLike[str], fields: Iterable[str], **options: Any):
        self._root = uri_text(root_uri).rstrip("/")
        self._fields = tuple(fields)
        if not self._fields:
            raise ValueError("a namespace needs at least one selector field")
        for f in self._fields:
            if f not in _SELECTOR_FIELDS:
                raise ValueError(
                    f"invalid selector field {f!r}: valid fields are {', '.join(_SELECTOR_FIELDS)}"
                )
        if len(set(self._fields)) != len(self._fields):
            raise ValueError("selector fields must be distinct")
        self._options = options
        self._lock = threading.Lock()
        manifest = self._read_manifest()
        if manifest is None:
            self._write_manifest({"fields": list(self._fields), "partitions": []})
        elif tuple(manifest["fields"]) != self._fields:
            raise InvalidRequestError(
                f"namespace {self._root!r} has fields {manifest['fields']}, not {list(self._fields)}"
            )

    @classmethod
    def create(
        cls, root_uri: str | os.PathLike[str], fields: Iterable[str], **options: Any
    ) -> ContextNamespace:
        return cls(root_uri, fields, **options)

    def root_uri(self) -> str:
        return self._root

    def manifest_uri(self) -> str:
        return f"{self._root}/{_MANIFEST}"

    def _memory(self) -> bool:
        return self._root.startswith("memory://")

    def _manifest_path(self) -> str:
        root = self._root
        if root.startswith("file://"):
            root = urllib.parse.unquote(urllib.parse.urlparse(root).path)
        return os.path.join(root, _MANIFEST)

    def _read_manifest(self) -> dict[str, Any] | None:
        if self._memory():
            with _memory_lock:
                m = _memory_manifests.get(self._root)
                return json.loads(json.dumps(m)) if m is not None else None
        try:
            with open(self._manifest_path(), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        if self._memory():
            with _memory_lock:
                _memory_manifests[self._root] = manifest
            return
        path = self._manifest_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(manifest, f, sort_keys=True, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def _selector(self, selector: dict[str, Any]) -> dict[str, str]:
        missing = [f for f in self._fields if f not in selector]
        extra = [f for f in selector if f not in self._fields]
        if missing or extra:
            raise ValueError(
                f"a selector of this namespace names exactly {', '.join(self._fields)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
        out = {}
        for f in self._fields:
            value = selector[f]
            if not isinstance(value, str) or not value:
                raise ValueError(f"selector field {f} must be a non-empty str")
            out[f] = value
        return out

    def partition_uri(self, **selector: Any) -> str:
        """Where the partition of ``selector`` lives: ``root/field=value/...`` (values
        percent-encoded)."""
        s = self._selector(selector)
        parts = [f"{f}={urllib.parse.quote(s[f], safe='')}" for f in self._fields]
        return "/".join([self._root, *parts])

    def context(self, **selector: Any) -> Context:
        """The partition's Context (created when new); its adds default the selector fields."""
        s = self._selector(selector)
        uri = self.partition_uri(**s)
        ctx = Context(uri, **self._options)
        ctx._defaults = dict(s)
        with self._lock:
            manifest = self._read_manifest() or {"fields": list(self._fields), "partitions": []}
            if s not in manifest["partitions"]:
                manifest["partitions"].append(s)
                self._write_manifest(manifest)
        return ctx

    def partitions(self) -> list[dict[str, str]]:
        """The selectors of the partitions made so far, in creation order."""
        manifest = self._read_manifest()
        return list(manifest["partitions"]) if manifest else []
