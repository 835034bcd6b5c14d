"""GenericStore behaviour (lance-context §5.5, §3.4) through the `open_generic` fixture, plus
the remote twin's connect / connect_or_create."""

from __future__ import annotations

import base64
import datetime as dt

import pytest

from strata.errors import InvalidRequestError, NotFoundError
from strata.remote import RemoteGenericStore, schema_spec

SCHEMA = {
    "id": {"type": "string", "nullable": False},
    "user": "string",
    "score": "float32",
    "n": "int64",
    "tags": {"type": "list", "item": {"type": "string"}},
    "embedding": {"type": "vector", "dim": 3, "metric": "cosine"},
    "payload": {"type": "binary", "blob": True},
    "at": "timestamp",
}

FULL_SPEC = {"columns": [
    ["id", {"type": "string", "nullable": False}],
    ["user", {"type": "string"}],
    ["score", {"type": "float64"}],
    ["embedding", {"type": "vector", "dim": 2}],
]}


def test_declared_schema_round_trips(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    version = store.add([
        {"id": "r1", "user": "u1", "score": 0.5, "n": 7, "tags": ["a", "b"],
         "embedding": [1.0, 2.0, 3.0], "at": 1_700_000_000_000_000},
        {"id": "r2"},  # every nullable column may be left out
    ])
    assert isinstance(version, int)
    assert len(store.list()) == 2
    first = store.get("r1")
    assert first == {"id": "r1", "user": "u1", "score": 0.5, "n": 7, "tags": ["a", "b"],
                     "embedding": [1.0, 2.0, 3.0], "at": 1_700_000_000_000_000}
    assert all(isinstance(v, float) for v in first["embedding"])
    assert set(store.get("r2")) == {"id"}  # nulls are left out, not None
    assert store.get("missing") is None


def test_schema_reports_declared_columns(open_generic):
    store = open_generic(SCHEMA)
    assert [name for name, _ in store.schema()["columns"]] == list(SCHEMA)
    assert store.schema()["columns"][5][1]["metric"] == "cosine"


def test_full_spec_form(open_generic):
    store = open_generic(FULL_SPEC, seal_on_add=True)
    assert [c[0] for c in store.schema()["columns"]] == ["id", "user", "score", "embedding"]
    store.add([{"id": "a", "score": 2, "embedding": [0.5, 1]}])
    assert store.get("a") == {"id": "a", "score": 2.0, "embedding": [0.5, 1.0]}
    assert isinstance(store.get("a")["score"], float)


def test_shorthand_and_full_type_forms_agree():
    assert schema_spec({"id": {"type": "string", "nullable": False}, "n": "int64"}) == {
        "columns": [["id", {"type": "string", "nullable": False}], ["n", {"type": "int64"}]]}
    assert schema_spec(FULL_SPEC) == FULL_SPEC
    with pytest.raises(TypeError):
        schema_spec([("id", "string")])


def test_id_column_is_required(open_generic):
    with pytest.raises(ValueError, match="'id' column"):
        open_generic({"name": "string"})
    with pytest.raises(InvalidRequestError, match="nested lists are not supported"):
        open_generic({"id": {"type": "string", "nullable": False},
                      "x": {"type": "list", "item": {"type": "list",
                                                     "item": {"type": "int32"}}}})


def test_bad_rows_are_refused_naming_row_and_column(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    with pytest.raises(InvalidRequestError, match="column 'usr' is not declared"):
        store.add([{"id": "r1", "usr": "typo"}])
    with pytest.raises(InvalidRequestError, match="row 1: column 'score'"):
        store.add([{"id": "r1"}, {"id": "r2", "score": "not-a-number"}])
    with pytest.raises(InvalidRequestError, match="vector of 3"):
        store.add([{"id": "r1", "embedding": [1.0, 2.0]}])
    with pytest.raises(InvalidRequestError, match="'id' is not nullable"):
        store.add([{"user": "no id"}])
    with pytest.raises(InvalidRequestError, match="must not be empty"):
        store.add([])
    assert store.list() == []


def test_blob_excluded_from_list_but_fetchable_per_row(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    big = bytes(i % 251 for i in range(2 * 1024 * 1024))
    store.add([{"id": "r1", "payload": b"\x01\x02\x03"}, {"id": "big", "payload": big},
               {"id": "ints", "payload": [1, 2, 3]}])
    assert all("payload" not in row for row in store.list())
    assert "payload" not in store.get("r1")
    fetched = store.get("r1", columns=["payload"])
    assert fetched == {"id": "r1", "payload": base64.b64encode(b"\x01\x02\x03").decode()}
    assert base64.b64decode(store.get("big", columns=["payload"])["payload"]) == big
    assert base64.b64decode(store.get("ints", columns=["payload"])["payload"]) == b"\x01\x02\x03"
    assert store.get("r1", columns=[]) == {"id": "r1"}  # an existence check
    assert store.get("gone", columns=[]) is None


def test_timestamps_take_microseconds_text_and_aware_datetimes(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    when = dt.datetime(2026, 3, 4, 5, 6, 7, 8, tzinfo=dt.timezone.utc)
    micros = int(when.timestamp()) * 1_000_000 + 8
    store.add([{"id": "a", "at": when}, {"id": "b", "at": "2026-03-04T05:06:07.000008Z"},
               {"id": "c", "at": micros}])
    assert {r["id"]: r["at"] for r in store.list()} == {"a": micros, "b": micros, "c": micros}
    with pytest.raises(InvalidRequestError, match="rows\\[0\\].at must include timezone"):
        store.add([{"id": "d", "at": dt.datetime(2026, 1, 1)}])


def test_filter_and_paging(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    store.add([{"id": f"r{i}", "user": "even" if i % 2 == 0 else "odd", "score": float(i)}
               for i in range(6)])
    evens = store.list(filter="user = 'even'")
    assert sorted(r["id"] for r in evens) == ["r0", "r2", "r4"]
    assert sorted(r["id"] for r in store.list(filter="score >= 4")) == ["r4", "r5"]
    everything = [r["id"] for r in store.list()]
    assert len(everything) == 6
    assert [r["id"] for r in store.list(limit=2, offset=1)] == everything[1:3]
    with pytest.raises(InvalidRequestError):
        store.list(filter="no_such_column = 1")


def test_duplicate_id_keeps_the_newest_write(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    store.add([{"id": "r1", "user": "first"}])
    store.add([{"id": "r1", "user": "second"}])
    assert [r["user"] for r in store.list()] == ["second"]


def test_deferred_seal_needs_a_flush(open_generic):
    store = open_generic(SCHEMA, seal_on_add=False)
    store.add([{"id": "r1"}])
    assert store.list() == []
    store.flush()
    assert [r["id"] for r in store.list()] == ["r1"]


def test_wal_generations_merge_into_the_base_table(open_generic):
    store = open_generic(SCHEMA, seal_on_add=True)
    for i in range(3):
        store.add([{"id": f"r{i}"}])
    assert store.cleanup_wal() > 0
    assert len(store.list()) == 3


def test_numpy_vectors_in_and_out(open_generic):
    np = pytest.importorskip("numpy")
    store = open_generic(SCHEMA, seal_on_add=True)
    store.add([{"id": "v", "embedding": np.array([0.25, 0.5, 1.0], dtype=np.float32)}])
    got = store.get("v", vectors="numpy")
    assert got["embedding"].dtype == np.float32
    assert got["embedding"].tolist() == [0.25, 0.5, 1.0]
    [listed] = store.list(vectors="numpy")
    assert isinstance(listed["embedding"], np.ndarray)
    assert store.get("v")["embedding"] == [0.25, 0.5, 1.0]
    with pytest.raises(InvalidRequestError, match="vectors: expected 'list' or 'numpy'"):
        store.list(vectors="tuple")


def test_reopen_checks_the_persisted_schema(open_generic, store_name):
    created = open_generic(SCHEMA, seal_on_add=True)
    created.add([{"id": "r1", "user": "u1"}])
    # The same schema (in the other form, defaults spelled out) opens it...
    same = open_generic(dict(SCHEMA, tags={"type": "list", "item": {"type": "string"},
                                           "nullable": True}), name=store_name)
    assert same.list() == [{"id": "r1", "user": "u1"}]
    # ... a different one is refused.
    with pytest.raises(InvalidRequestError, match="different schema"):
        open_generic({**SCHEMA, "extra": "int64"}, name=store_name)


def test_connect_reads_the_persisted_schema(base_url, store_name):
    created = RemoteGenericStore.connect_or_create(base_url, store_name, SCHEMA,
                                                   seal_on_add=True)
    created.add([{"id": "r1", "user": "u1"}])
    again = RemoteGenericStore.connect(base_url, store_name)
    assert again.uri == created.uri
    assert [name for name, _ in again.schema()["columns"]] == list(SCHEMA)
    assert again.list() == [{"id": "r1", "user": "u1"}]
    with pytest.raises(NotFoundError, match="does not exist"):
        RemoteGenericStore.connect(base_url, store_name + "-missing")


def test_seal_mode_is_the_stores(open_generic, store_name):
    sealed = open_generic(SCHEMA, seal_on_add=True)
    # Reopened with the opposite default: the created mode wins.
    reopened = open_generic(SCHEMA, seal_on_add=False, name=store_name)
    reopened.add([{"id": "r1"}])
    assert len(sealed.list()) == 1
