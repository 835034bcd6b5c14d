"""What RemoteDatagenStore needs, beyond the HTTP client, to behave exactly as the embedded
DatagenStore (strata/datagen.py): the same inputs accepted and refused with the same
messages, the same events built, the same result shapes.

- ClientWriterHandle: the C++ DatagenStreamWriterHandle's interface, in Python. The C++ writer
  can only be made by a C++ DatagenStore (its constructor is private to the engine), so a
  remote store's writers are strata.DatagenStreamWriter over this handle instead. It follows
  DatagenStreamWriter::Build* (src/store/datagen_store.cc) and, for its checks, the event
  validation (src/store/datagen_event.cc).
- event_for_http: an event mapping read as the extension reads it (DatagenEventFromPython),
  as JSON for POST /datagen/{name}/events.
- The readers below mirror src/python/py_values.cc and datagen_events.cc, messages included,
  so a bad position, field, value or event gets the message the extension gives it.
- folded_item, item_failure, overview, item_tree: the HTTP API's JSON (DatagenFoldedItemDto,
  ...) in the extension's shapes (datagen_events.cc "Out"): absent optionals left out,
  positions flat, blob bytes as bytes.

Item ids and event ids are the extension's (strata._strata.DatagenItemId, datagen_event_id).
test_remote_datagen.py runs one suite on both stores to hold them to one behaviour.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import operator
import time
from collections.abc import Mapping
from typing import Any, NoReturn

from . import _strata
from .errors import InvalidRequestError

__all__ = [
    "ClientWriterHandle",
    "blob_event_id",
    "event_for_http",
    "folded_item",
    "item_failure",
    "item_tree",
    "overview",
]

SCHEMA_VERSION = 2
_STEP_KINDS = ("root", "leaf", "sequence", "loop", "map_reduce", "branch", "sub_pipeline",
               "conditional", "router")
_EVENT_TYPES = ("ITEM_CREATED", "STEP_STARTED", "FIELD_SET", "FIELD_APPEND", "STEP_COMPLETED",
                "FAILED", "TERMINAL")
_STATUSES = ("running", "completed", "filtered", "failed")
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_MAX_JSON_DEPTH = 256
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

# An event's keys in the order the extension writes them (DatagenEventToPython).
_EVENT_KEYS = (
    "event_id", "item_id", "root_item_id", "parent_item_id", "item_seq", "checkpoint_id",
    "event_type", "step_name", "step_kind", "step_index", "enclosing_step", "selector_step",
    "attempt", "run_id", "writer_epoch", "field_name", "field_type", "codec_version", "value",
    "query_tags", "status", "error_type", "error_dump", "traceback", "event_ts",
    "schema_version",
)
_POSITION_KEYS = ("step_name", "step_kind", "step_index", "enclosing_step", "selector_step")


# --- Readers (src/python/py_values.cc) -------------------------------------------------------


def _invalid(message: str) -> InvalidRequestError:
    # The extension raises InvalidArgument statuses as InvalidRequestError with this status.
    return InvalidRequestError(message, status="InvalidArgument")


def _type_name(value: Any) -> str:
    """The C type's tp_name: "bytes", "numpy.float32", a Python class's own name."""
    t = type(value)
    if t.__module__ == "builtins" or t.__flags__ & (1 << 9):  # Py_TPFLAGS_HEAPTYPE
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean true" if value else "boolean false"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:
            return "string (not valid Unicode)"
        cut = len(data) > 40
        shown = data[:40].decode("utf-8", "replace") if cut else value
        return f"string {_json_quote(shown)}{'...' if cut else ''}"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return _type_name(value)


def _json_quote(text: str) -> str:
    # nlohmann's dump: UTF-8 kept, control characters escaped (lower-case hex).
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _expected(path: str, what: str, value: Any) -> NoReturn:
    raise _invalid(f"{path}: expected {what}, found {_describe(value)}")


def _out_of_range(path: str, value: Any, what: str) -> NoReturn:
    raise _invalid(f"{path}: {value!r} is out of range for {what}")


def _as_dict(value: Any, path: str) -> dict:
    """MappingAsDict: a dict, or a dict of another mapping; TypeError for anything else."""
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{path} must be a mapping, found {_type_name(value)}")


def _items(value: Any, path: str) -> list[tuple[str, Any]]:
    """(key, value) of a mapping, None values left out (ForEachKey); keys must be str."""
    out = []
    for key, item in list(_as_dict(value, path).items()):
        if item is None:
            continue
        if not isinstance(key, str):
            raise _invalid(f"{path}: keys must be strings, found {_describe(key)}")
        out.append((key, item))
    return out


def _read_string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _expected(path, "a string", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(
            f"{path}: the string is not valid Unicode (it holds a lone surrogate)") from None
    return str(value)


def _read_integer(value: Any, path: str, bounds: tuple[int, int], expected: str) -> int:
    if isinstance(value, bool):
        _expected(path, expected, value)
    if isinstance(value, int):
        out = int(value)
        if out < _INT64[0] or out > _INT64[1]:
            _out_of_range(path, value, expected)
    elif isinstance(value, float):
        # As the HTTP API reads JSON: a number with a zero fraction counts (3.0).
        if not math.isfinite(value) or math.trunc(value) != value:
            _expected(path, expected, value)
        if value < -(2.0**63) or value >= 2.0**63:
            _out_of_range(path, value, expected)
        out = int(value)
    elif hasattr(type(value), "__index__") and not isinstance(value, str):  # numpy integers
        return _read_integer(operator.index(value), path, bounds, expected)
    elif hasattr(type(value), "__float__") and not isinstance(value, (str, bytes)):
        return _read_integer(float(value), path, bounds, expected)
    else:
        _expected(path, expected, value)
    if out < bounds[0] or out > bounds[1]:
        _out_of_range(path, value, expected)
    return out


def _read_int64(value: Any, path: str) -> int:
    return _read_integer(value, path, _INT64, "an integer")


def _read_int32(value: Any, path: str) -> int:
    return _read_integer(value, path, _INT32, "a 32-bit integer")


def _read_number(value: Any, path: str) -> float:
    if isinstance(value, bool):
        _expected(path, "a number", value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            _out_of_range(path, value, "a number")
    if isinstance(value, str):
        # The HTTP API's spelling of the values JSON has no number for.
        text = _read_string(value, path)
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if text in special:
            return special[text]
        _expected(path, "a number", value)
    t = type(value)
    if (hasattr(t, "__float__") and not isinstance(value, bytes)) or hasattr(t, "__index__"):
        return float(value)
    _expected(path, "a number", value)


def _read_bool(value: Any, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if _type_name(value) == "numpy.bool_":
        return bool(value)
    _expected(path, "a boolean", value)


_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUES = {c: i for i, c in enumerate(_B64)}


def _base64_decode(text: str, path: str) -> bytes:
    """json::Base64Decode: canonical padded base64 only, refused with its messages."""
    data = text.encode("utf-8")
    try:
        decoded = base64.b64decode(data, validate=True)
        if base64.b64encode(decoded) == data:
            return decoded
    except ValueError:
        pass

    def fail(message: str) -> NoReturn:
        raise _invalid(f"{path}: invalid base64: {message}")

    def describe(b: int) -> str:
        return f"'{chr(b)}' (0x{b:02x})" if 0x20 <= b < 0x7F else f"byte 0x{b:02x}"

    if len(data) % 4 != 0:
        fail(f"length {len(data)} is not a multiple of 4")
    padding = (2 if data[-2:-1] == b"=" else 1) if data.endswith(b"=") else 0
    chars = len(data) - padding
    for pos in range(chars):
        if data[pos] not in _B64_VALUES:
            reason = "padding '=' before the end" if data[pos] == ord("=") else \
                "invalid character"
            fail(f"{reason} {describe(data[pos])} at position {pos}")
    # Every character is valid and the length right: the last one has bits a canonical
    # encoder sets to zero.
    fail(f"non-zero unused bits in character {describe(data[chars - 1])} at position "
         f"{chars - 1} before padding")


def _read_bytes(value: Any, path: str) -> bytes:
    if isinstance(value, str):
        return _base64_decode(_read_string(value, path), path)
    if isinstance(value, bytes):
        return bytes(value)
    try:
        view = memoryview(value)
    except TypeError:
        _expected(path, "bytes or a base64 string", value)
    if not view.c_contiguous:
        _expected(path, "bytes (a C-contiguous buffer)", value)
    return view.tobytes()


def _to_json(value: Any, path: str, depth: int = 0) -> Any:
    """A Python value as the JSON the extension stores (ToJson, strict) and reads back
    (StoredJsonToPython): objects with their keys sorted, tuples as lists."""
    if depth > _MAX_JSON_DEPTH:
        raise _invalid(f"{path}: nested more than {_MAX_JSON_DEPTH} levels deep (or a container "
                       "holds itself)")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value < _INT64[0] or value >= 2**64:
            _out_of_range(path, value, "a JSON integer (64 bits)")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(f"{path}: {value!r} is not a JSON number")
        return float(value)
    if isinstance(value, str):
        return _read_string(value, path)
    if isinstance(value, (list, tuple)):
        return [_to_json(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(tuple(value))]
    if isinstance(value, Mapping):
        entries = list(dict(value).items())
        out = {}
        for key, item in entries:
            if not isinstance(key, str):
                raise _invalid(f"{path}: object keys must be strings, found {_describe(key)}")
            name = _read_string(key, path)
            out[name] = _to_json(item, f"{path}.{name}", depth + 1)
        return {k: out[k] for k in sorted(out)}
    if _type_name(value).startswith("numpy."):
        import numpy

        if isinstance(value, numpy.ndarray):
            return _to_json(value.tolist(), path, depth + 1)
        if hasattr(value, "item"):  # a numpy scalar
            return _to_json(value.item(), path, depth + 1)
    _expected(path, "a JSON value", value)


# --- Values, positions, fields and events (src/python/datagen_events.cc) ---------------------


def _required(path: str, key: str) -> NoReturn:
    raise _invalid(f"{path}.{key} is required")


def _read_enum(value: Any, path: str, names: tuple[str, ...], what: str) -> str:
    text = _read_string(value, path)
    if text not in names:
        raise _invalid(f"{path}: unsupported datagen {what} '{text}'")
    return text


def read_value(value: Any, path: str) -> dict[str, Any]:
    """A value object as the extension reads it and writes it back (ValueToPython)."""
    try:
        entries = _items(value, path)
    except TypeError:
        raise _invalid(f"{path}: expected a datagen value object {{kind, value?, bytes?, size?, "
                       f"checksum?}}, found {_describe(value)}") from None
    kind = inner = data = size = checksum = None
    has_inner = False
    for key, item in entries:
        if key == "kind":
            kind = _read_string(item, f"{path}.kind")
        elif key == "value":
            inner, has_inner = item, True
        elif key == "bytes":
            data = _read_bytes(item, f"{path}.bytes")
        elif key == "size":
            size = _read_int64(item, f"{path}.size")
        elif key == "checksum":
            checksum = _read_string(item, f"{path}.checksum")
    if kind is None:
        _required(path, "kind")
    if kind == "blob":
        if size is not None and size < 0:
            raise _invalid(f"{path}.size: must not be negative, got {size}")
        out: dict[str, Any] = {"kind": "blob"}
        if data is not None:
            out["bytes"] = data
        out["size"] = size if size is not None else (len(data) if data is not None else 0)
        if checksum is not None:
            out["checksum"] = checksum
        return out
    if kind not in ("int", "float", "bool", "str", "json"):
        raise _invalid(f"{path}.kind: unsupported datagen value kind '{kind}': valid kinds are "
                       "'int', 'float', 'bool', 'str', 'json', 'blob'")
    if not has_inner:
        raise _invalid(f"{path}: datagen value of kind '{kind}' is missing 'value'")
    inner_path = f"{path}.value"
    if kind == "int":
        v: Any = _read_int64(inner, inner_path)
    elif kind == "float":
        v = _read_number(inner, inner_path)
    elif kind == "bool":
        v = _read_bool(inner, inner_path)
    elif kind == "str":
        v = _read_string(inner, inner_path)
    else:
        v = _to_json(inner, inner_path)
    return {"kind": kind, "value": v}


def read_position(position: Any, path: str = "position") -> dict[str, Any]:
    """A step position ({step_name, step_kind, index, enclosing?, selector?}, or the event
    columns' spellings) as event columns, absent ones left out."""
    name = kind = index = enclosing = selector = None

    def once(already: bool, a: str, b: str) -> None:
        if already:
            raise _invalid(f"{path}: give {a} or {b}, not both")

    for key, item in _items(position, path):
        p = f"{path}.{key}"
        if key == "step_name":
            name = _read_string(item, p)
        elif key == "step_kind":
            kind = _read_enum(item, p, _STEP_KINDS, "step kind")
        elif key in ("index", "step_index"):
            once(index is not None, "index", "step_index")
            index = _read_int64(item, p)
        elif key in ("enclosing", "enclosing_step"):
            once(enclosing is not None, "enclosing", "enclosing_step")
            enclosing = _read_string(item, p)
        elif key in ("selector", "selector_step"):
            once(selector is not None, "selector", "selector_step")
            selector = _read_string(item, p)
    if name is None:
        _required(path, "step_name")
    if kind is None:
        _required(path, "step_kind")
    if index is None:
        _required(path, "index")
    out = {"step_name": name, "step_kind": kind, "step_index": index}
    if enclosing is not None:
        out["enclosing_step"] = enclosing
    if selector is not None:
        out["selector_step"] = selector
    return out


def _read_fields(fields: Any, path: str = "fields") -> list[dict[str, Any]]:
    if not isinstance(fields, (list, tuple)):
        raise _invalid(f"{path}: expected an array of field objects, found {_describe(fields)}")
    out = []
    for i, field in enumerate(tuple(fields)):
        item = f"{path}[{i}]"
        name = value = None
        write = {"append": False, "field_type": "", "codec_version": 1}
        for key, v in _items(field, item):
            p = f"{item}.{key}"
            if key == "name":
                name = _read_string(v, p)
            elif key == "value":
                value = read_value(v, p)
            elif key == "op":
                op = _read_string(v, p)
                if op not in ("set", "append"):
                    raise _invalid(f"{p}: unsupported field op '{op}': valid ops are 'set', "
                                   "'append'")
                write["append"] = op == "append"
            elif key == "field_type":
                write["field_type"] = _read_string(v, p)
            elif key == "codec_version":
                write["codec_version"] = _read_int32(v, p)
        if name is None:
            _required(item, "name")
        if value is None:
            _required(item, "value")
        write["name"] = name
        write["value"] = value
        out.append(write)
    return out


def _read_timestamp(value: Any, path: str) -> Any:
    """event_ts for the HTTP API: RFC 3339 text as given (the server parses it as the
    extension does), integer microseconds, or an aware datetime as microseconds."""
    if isinstance(value, str):
        return _read_string(value, path)
    if isinstance(value, int) and not isinstance(value, bool):
        return _read_int64(value, path)
    if isinstance(value, _dt.datetime):
        if value.utcoffset() is None:
            raise _invalid(f"{path} must include timezone information")
        return (value - _EPOCH) // _dt.timedelta(microseconds=1)
    _expected(path, "an RFC 3339 timestamp string, integer microseconds or a timezone-aware "
                    "datetime", value)


def event_for_http(event: Any, path: str) -> dict[str, Any]:
    """An event mapping read as the extension reads one (None values and unknown keys left
    out, each value checked with the extension's message), as the HTTP API's JSON event:
    blob bytes base64, JSON values plain, event_ts text or microseconds."""
    out: dict[str, Any] = {}
    readers = {
        "item_seq": _read_int64, "step_index": _read_int64, "attempt": _read_int32,
        "codec_version": _read_int32, "schema_version": _read_int32,
        "event_ts": _read_timestamp,
    }
    enums = {"event_type": (_EVENT_TYPES, "event type"), "step_kind": (_STEP_KINDS, "step kind"),
             "status": (_STATUSES, "item status")}
    for key, value in _items(event, path):
        if key not in _EVENT_KEYS:
            continue  # unknown keys are ignored, as by the HTTP API
        p = f"{path}.{key}"
        if key in readers:
            out[key] = readers[key](value, p)
        elif key in enums:
            out[key] = _read_enum(value, p, *enums[key])
        elif key == "writer_epoch":
            # A str, or an int taken as its decimal text.
            if isinstance(value, int) and not isinstance(value, bool):
                out[key] = str(value)
            elif isinstance(value, str):
                out[key] = _read_string(value, p)
            else:
                _expected(p, "a string (or an integer)", value)
        elif key == "value":
            v = read_value(value, p)
            if "bytes" in v:
                v["bytes"] = base64.b64encode(v["bytes"]).decode("ascii")
            out[key] = v
        elif key == "query_tags":
            out[key] = _to_json(value, p)
        else:
            out[key] = _read_string(value, p)
    for key in ("event_id", "item_id", "root_item_id", "item_seq", "checkpoint_id",
                "event_type", "run_id", "writer_epoch"):
        if key not in out:
            _required(path, key)
    return out


# --- The stream writer ------------------------------------------------------------------------


def _now_text() -> str:
    """json::FormatTimestamp of the wall clock: UTC, six fraction digits, 'Z'."""
    micros = time.time_ns() // 1000
    moment = _EPOCH + _dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _validate(events: list[dict[str, Any]]) -> None:
    """The checks of ValidateDatagenWriteBatch that a writer's events can fail."""
    for e in events:
        event_id = e["event_id"]
        for column in ("event_id", "item_id", "root_item_id", "checkpoint_id", "run_id",
                       "writer_epoch"):
            if e[column] == "":
                raise _invalid(f"event '{event_id}': {column} must not be empty")
        value = e.get("value")
        if value is not None and value["kind"] == "blob":
            if "bytes" not in value:
                raise _invalid(f"blob event '{event_id}' has no bytes on the write path")
            if value["size"] != len(value["bytes"]):
                raise _invalid(f"blob event '{event_id}' declares {value['size']} bytes but "
                               f"contains {len(value['bytes'])}")


class ClientWriterHandle:
    """One item's writer state and its Build calls, as strata._strata.DatagenStreamWriterHandle
    has them: events are returned, never written; a call that raises leaves the writer as it
    was. Checkpoint ids "item NUL attempt NUL step NUL index NUL ordinal" for the step calls,
    "item NUL terminal NUL item_seq" for TERMINAL, "item NUL created" for ITEM_CREATED."""

    __slots__ = ("_item", "_root", "_parent", "_run_id", "_writer_epoch", "_next_seq",
                 "_attempt", "_ordinal")

    def __init__(self, item_id: str, *, root_item_id: str, parent_item_id: str | None,
                 run_id: str, writer_epoch: str, next_seq: int, attempt: int) -> None:
        self._item = item_id
        self._root = root_item_id
        self._parent = parent_item_id
        self._run_id = run_id
        self._writer_epoch = writer_epoch
        self._next_seq = next_seq
        self._attempt = attempt
        self._ordinal = 0

    @property
    def item_id(self) -> str:
        return self._item

    @property
    def attempt(self) -> int:
        return self._attempt

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def _event(self, event_type: str, checkpoint_id: str, ordinal: int, item_seq: int,
               **columns: Any) -> dict[str, Any]:
        columns.update(
            event_id=_strata.datagen_event_id(self._item, checkpoint_id, ordinal),
            item_id=self._item, root_item_id=self._root, parent_item_id=self._parent,
            item_seq=item_seq, checkpoint_id=checkpoint_id, event_type=event_type,
            attempt=self._attempt, run_id=self._run_id, writer_epoch=self._writer_epoch,
            event_ts=_now_text(), schema_version=SCHEMA_VERSION)
        return {k: columns[k] for k in _EVENT_KEYS if columns.get(k) is not None}

    def _step_checkpoint(self, position: dict[str, Any]) -> str:
        return "\0".join((self._item, str(self._attempt), position["step_name"],
                          str(position["step_index"]), str(self._ordinal)))

    def item_created(self, query_tags: Any = None) -> dict[str, Any]:
        """ITEM_CREATED (item_seq 1, status running), which opening a stream appends; the
        writer moves on to item_seq 2."""
        tags = None if query_tags is None else _to_json(query_tags, "query_tags")
        event = self._event("ITEM_CREATED", f"{self._item}\0created", 0, 1, status="running",
                            query_tags=tags)
        _validate([event])
        self._next_seq = 2
        return event

    def step_started(self, position: Any) -> dict[str, Any]:
        pos = read_position(position)
        event = self._event("STEP_STARTED", self._step_checkpoint(pos), 0, self._next_seq, **pos)
        _validate([event])
        self._next_seq += 1
        self._ordinal += 1
        return event

    def step_completed(self, position: Any, fields: Any) -> list[dict[str, Any]]:
        pos = read_position(position)
        writes = _read_fields(fields)
        checkpoint = self._step_checkpoint(pos)
        events = []
        for i, f in enumerate(writes):
            events.append(self._event(
                "FIELD_APPEND" if f["append"] else "FIELD_SET", checkpoint, i + 1,
                self._next_seq + i, **pos, field_name=f["name"],
                field_type=f["field_type"] or f["value"]["kind"],
                codec_version=f["codec_version"], value=f["value"]))
        events.append(self._event("STEP_COMPLETED", checkpoint, 0, self._next_seq + len(writes),
                                  **pos))
        _validate(events)
        self._next_seq += len(events)
        self._ordinal += 1
        return events

    def item_terminal(self, status: str) -> dict[str, Any]:
        if status not in _STATUSES:
            raise _invalid(f"unsupported datagen item status '{status}'")
        if status not in ("completed", "filtered"):
            raise _invalid(f"item_terminal needs status completed or filtered, got {status}")
        checkpoint = f"{self._item}\0terminal\0{self._next_seq}"
        event = self._event("TERMINAL", checkpoint, 0, self._next_seq, status=status)
        _validate([event])
        self._next_seq += 1
        return event

    def item_failed(self, position: Any, error_type: str, error_dump: str | None = None,
                    traceback: str | None = None) -> dict[str, Any]:
        pos = read_position(position)
        event = self._event("FAILED", self._step_checkpoint(pos), 0, self._next_seq, **pos,
                            status="failed", error_type=error_type, error_dump=error_dump,
                            traceback=traceback)
        _validate([event])
        self._next_seq += 1
        self._ordinal += 1
        return event


# --- The HTTP API's results in the extension's shapes ----------------------------------------


def _value(v: Mapping[str, Any]) -> dict[str, Any]:
    kind = v["kind"]
    out: dict[str, Any] = {"kind": kind}
    if kind == "blob":
        if v.get("bytes") is not None:
            out["bytes"] = base64.b64decode(v["bytes"])
        out["size"] = v["size"]
        if v.get("checksum") is not None:
            out["checksum"] = v["checksum"]
    elif kind == "float":
        # Non-finite floats travel as the strings "NaN", "Infinity", "-Infinity".
        value = v["value"]
        out["value"] = float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(
            value, value)) if isinstance(value, str) else float(value)
    else:
        out["value"] = v["value"]
    return out


def _position(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: p[k] for k in _POSITION_KEYS if p.get(k) is not None}


def _cursor(c: Mapping[str, Any]) -> dict[str, Any]:
    out = _position(c)
    out["item_seq"] = c["item_seq"]
    return out


def folded_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """DatagenFoldedItemDto as DatagenFoldedItemToPython shapes a folded item."""
    out: dict[str, Any] = {"item_id": item["item_id"], "root_item_id": item["root_item_id"]}
    if item.get("parent_item_id") is not None:
        out["parent_item_id"] = item["parent_item_id"]
    out["status"] = item["status"]
    out["last_item_seq"] = item["last_item_seq"]
    out["last_attempt"] = item["last_attempt"]
    fields = {}
    for name, state in (item.get("fields") or {}).items():
        if state.get("mode") == "append":
            fields[name] = {"mode": "append", "values": [_value(v) for v in state["values"]]}
        else:
            field: dict[str, Any] = {"mode": "set"}
            if state.get("value") is not None:
                field["value"] = _value(state["value"])
            fields[name] = field
    out["fields"] = fields
    out["trajectory"] = [_cursor(c) for c in item.get("trajectory") or []]
    if item.get("started"):
        out["started"] = [_position(p) for p in item["started"]]
    if item.get("completed"):
        out["completed"] = [_position(p) for p in item["completed"]]
    if item.get("query_tags") is not None:
        out["query_tags"] = item["query_tags"]
    if item.get("blob_event_ids"):
        out["blob_event_ids"] = dict(item["blob_event_ids"])
    return out


def item_failure(failure: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"at": _cursor(failure["at"]), "run_id": failure["run_id"],
                           "attempt": failure["attempt"], "error_type": failure["error_type"]}
    for key in ("error_dump", "traceback"):
        if failure.get(key) is not None:
            out[key] = failure[key]
    return out


def overview(o: Mapping[str, Any]) -> dict[str, Any]:
    runs = {
        run_id: {"failures": run["failures"],
                 "failures_by_error_type": dict(run["failures_by_error_type"]),
                 "sample_root_item_ids": list(run["sample_root_item_ids"])}
        for run_id, run in o["failures_by_run"].items()
    }
    return {"items": o["items"], "running": o["running"], "completed": o["completed"],
            "filtered": o["filtered"], "failures": o["failures"],
            "failures_by_error_type": dict(o["failures_by_error_type"]),
            "failures_by_run": runs, "completed_steps": dict(o["completed_steps"])}


def blob_event_id(folded: Any, field_name: str) -> str | None:
    """The event id of a folded item's blob field, read as the extension's load_blob reads
    it; None when the field holds no blob."""
    ids = _as_dict(folded, "folded").get("blob_event_ids")
    if ids is None:
        return None
    by_field = _as_dict(ids, "folded.blob_event_ids")
    if field_name not in by_field:
        return None
    return _read_string(by_field[field_name], f"folded.blob_event_ids.{field_name}")


def item_tree(folded: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The tree of the started items of one root ({id: folded item}), as DatagenStore's
    ItemTree links it: an item whose parent_item_id names another item of the tree is its
    child, any other is a root; nodes, roots and children sorted by id."""
    nodes = {item_id: {"item": folded[item_id], "children": []} for item_id in sorted(folded)}
    roots = []
    for item_id, node in nodes.items():
        parent = node["item"].get("parent_item_id")
        if parent is not None and parent in nodes and parent != item_id:
            nodes[parent]["children"].append(item_id)
        else:
            roots.append(item_id)
    return {"roots": roots, "nodes": nodes}
