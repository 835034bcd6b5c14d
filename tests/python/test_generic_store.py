"""strata.GenericStore: lance-context's GenericStore behaviour (declared schemas, the JSON
value rules, blobs, filters, seal modes, reopening) and strata's vectors as numpy arrays."""

import base64
import datetime
import gc

import numpy as np
import pytest

from strata import GenericStore, InvalidRequestError, NotFoundError, RolloutStore

SCHEMA = {
    "id": {"type": "string", "nullable": False},
    "user": "string",
    "score": "float32",
    "tags": {"type": "list", "item": {"type": "string"}},
    "embedding": {"type": "vector", "dim": 3, "metric": "cosine"},
    "payload": {"type": "binary", "blob": True},
}


def open_store(uri, **kwargs):
    # seal_on_add so each test reads its own writes without a flush; the deferred default is
    # tested on its own.
    kwargs.setdefault("seal_on_add", True)
    return GenericStore.open(uri, schema=SCHEMA, **kwargs)


def test_declared_schema_round_trips(any_uri):
    store = open_store(any_uri)
    version = store.add(
        [
            {"id": "r1", "user": "u1", "score": 0.5, "tags": ["a", "b"],
             "embedding": [1.0, 2.0, 3.0]},
            {"id": "r2"},  # every nullable column may be left out
        ]
    )
    assert version == store.version()
    assert len(store.list()) == 2
    first = store.get("r1")
    assert first == {"id": "r1", "user": "u1", "score": 0.5, "tags": ["a", "b"],
                     "embedding": [1.0, 2.0, 3.0]}
    # Nulls are left out rather than returned as None.
    assert store.get("r2") == {"id": "r2"}
    assert store.get("missing") is None


def test_schema_reports_declared_columns(any_uri):
    store = open_store(any_uri)
    spec = store.schema()
    assert [name for name, _ in spec["columns"]] == list(SCHEMA)
    assert dict(spec["columns"])["embedding"] == {"type": "vector", "dim": 3, "metric": "cosine"}
    assert dict(spec["columns"])["id"] == {"type": "string", "nullable": False}
    assert store.seal_on_add is True


def test_full_spec_and_shorthand_forms_agree(tmp_path):
    full = GenericStore.open(
        str(tmp_path / "full"),
        {"columns": [["id", {"type": "string", "nullable": False}], ["n", "int64"]]},
        seal_on_add=True,
    )
    short = GenericStore.open(
        str(tmp_path / "short"),
        {"id": {"type": "string", "nullable": False}, "n": "int64"},
        seal_on_add=True,
    )
    assert full.schema() == short.schema()
    short.add([{"id": "a", "n": 7}])
    assert short.list()[0]["n"] == 7


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"name": "string"}, "schema must declare an 'id' column"),
        ({}, "schema must declare at least one column"),
        ({"id": {"type": "string", "nullable": False}, "_x": "int32"}, "column '_x' is reserved"),
        ({"id": {"type": "string", "nullable": False}, "v": {"type": "vector", "dim": 0}},
         "dim"),
        ({"id": {"type": "string", "nullable": False}, "v": "complex"}, "complex"),
    ],
)
def test_invalid_schemas_are_refused_and_create_nothing(tmp_path, schema, message):
    with pytest.raises(ValueError, match=message) as raised:
        GenericStore.open(str(tmp_path / "bad"), schema=schema)
    assert isinstance(raised.value, InvalidRequestError)
    assert not (tmp_path / "bad").exists()


def test_schema_arguments_of_the_wrong_type_are_type_errors(tmp_path):
    with pytest.raises(TypeError, match="schema must be a mapping"):
        GenericStore.open(str(tmp_path / "a"), schema=["id"])
    with pytest.raises(TypeError, match="schema column 'n': expected a type name"):
        GenericStore.open(str(tmp_path / "a"), schema={"id": "string", "n": 5})


def test_undeclared_column_is_rejected_not_dropped(any_uri):
    # A field-name typo must fail the write rather than become missing data.
    store = open_store(any_uri)
    with pytest.raises(InvalidRequestError, match="row 0: column 'usr' is not declared"):
        store.add([{"id": "r1", "usr": "typo"}])
    assert store.list() == []


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": "r1", "score": "not-a-number"}, "row 0: column 'score' expects a number"),
        ({"id": "r1", "embedding": [1.0, 2.0]}, "expects a vector of 3 values, got 2"),
        ({"id": "r1", "embedding": [1.0, None, 2.0]}, r"column 'embedding\[1\]' expects a number"),
        ({"user": "no id"}, "column 'id' is not nullable and was not supplied"),
        ({"id": "r1", "tags": "a"}, "column 'tags' expects a list"),
        ({"id": "r1", "user": {1, 2}}, r"rows\[0\]\.user: expected a JSON value, found set"),
    ],
)
def test_bad_rows_are_refused_and_nothing_is_written(any_uri, row, message):
    store = open_store(any_uri)
    with pytest.raises(InvalidRequestError, match=message):
        store.add([row])
    with pytest.raises(InvalidRequestError):
        store.add([{"id": "good"}, row])
    assert store.list() == []


def test_rows_must_be_mappings(any_uri):
    store = open_store(any_uri)
    with pytest.raises(TypeError, match=r"rows\[0\] must be a mapping, found list"):
        store.add([["id", "x"]])
    with pytest.raises(ValueError, match="^rows array must not be empty$"):
        store.add([])
    store.add({"id": "single"})  # one mapping is one row
    assert [r["id"] for r in store.list()] == ["single"]


def test_blob_excluded_from_list_but_fetchable_per_row(any_uri):
    store = open_store(any_uri)
    store.add([{"id": "r1", "payload": [1, 2, 3]}, {"id": "r2", "payload": b"\x00\xff"},
               {"id": "r3", "payload": "AAE="}])
    listed = store.list()
    assert all("payload" not in row for row in listed)
    fetched = store.get("r1", columns=["payload"])
    assert fetched == {"id": "r1", "payload": "AQID"}  # base64, as the reference
    assert base64.b64decode(store.get("r2", columns=["payload"])["payload"]) == b"\x00\xff"
    assert base64.b64decode(store.get("r3", columns=["payload"])["payload"]) == b"\x00\x01"
    assert store.get("r1", columns=[]) == {"id": "r1"}  # an existence check
    with pytest.raises(InvalidRequestError):
        store.get("r1", columns=["nope"])


def test_large_blob_round_trips(any_uri):
    store = open_store(any_uri)
    payload = bytes((i % 251) for i in range(2 * 1024 * 1024))
    store.add([{"id": "big", "payload": payload}])
    fetched = store.get("big", columns=["payload"])
    assert base64.b64decode(fetched["payload"]) == payload


def test_filter_and_paging(any_uri):
    store = open_store(any_uri)
    store.add([{"id": f"r{i}", "user": "even" if i % 2 == 0 else "odd", "score": float(i)}
               for i in range(6)])
    evens = store.list(filter="user = 'even'")
    assert [r["id"] for r in evens] == ["r0", "r2", "r4"]
    assert [r["id"] for r in store.list(filter="score > 2.5 AND user = 'odd'")] == ["r3", "r5"]
    assert [r["id"] for r in store.list(limit=2, offset=1)] == ["r1", "r2"]
    with pytest.raises(InvalidRequestError):
        store.list(filter="score >")
    with pytest.raises(InvalidRequestError, match="limit: expected a non-negative integer"):
        store.list(limit=-2)


def test_duplicate_id_keeps_the_newest_write(any_uri):
    store = open_store(any_uri)
    store.add([{"id": "r1", "user": "first"}])
    store.add([{"id": "r1", "user": "second"}])
    rows = store.list()
    assert len(rows) == 1
    assert rows[0]["user"] == "second"


def test_deferred_seal_needs_a_flush(any_uri):
    store = GenericStore.open(any_uri, schema=SCHEMA)
    assert store.seal_on_add is False
    store.add([{"id": "r1"}])
    assert store.list() == []
    store.flush()
    assert len(store.list()) == 1


def test_wal_generations_merge_into_the_base_table(any_uri):
    store = open_store(any_uri)
    for i in range(3):
        store.add([{"id": f"r{i}"}])
    before = store.version()
    assert store.cleanup_wal() > 0
    assert store.version() > before
    assert len(store.list()) == 3
    assert store.cleanup_wal() == 0


def test_checkout_reads_an_older_version(any_uri):
    store = open_store(any_uri)
    store.add([{"id": "r1"}])
    store.cleanup_wal()
    first = store.version()
    store.add([{"id": "r2"}])
    store.cleanup_wal()
    store.checkout(first)
    assert [r["id"] for r in store.list()] == ["r1"]
    with pytest.raises(InvalidRequestError):
        store.add([{"id": "r3"}])
    store.refresh_latest()
    assert [r["id"] for r in store.list()] == ["r1", "r2"]


def test_reopen_reads_the_persisted_schema(any_uri):
    store = GenericStore.open(any_uri, schema=SCHEMA, seal_on_add=True)
    store.add([{"id": "r1", "user": "u1"}])
    del store
    gc.collect()
    reopened = GenericStore.open_existing(any_uri, seal_on_add=True)
    assert [name for name, _ in reopened.schema()["columns"]] == list(SCHEMA)
    assert len(reopened.list()) == 1


def test_open_existing_never_creates(tmp_path, memory_uri):
    with pytest.raises(NotFoundError, match="no generic store at"):
        GenericStore.open_existing(str(tmp_path / "nothing"))
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(NotFoundError):
        GenericStore.open_existing(memory_uri)
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotFoundError):
        GenericStore.open_existing(str(tmp_path / "empty"))


def test_reopening_with_a_conflicting_schema_is_rejected(any_uri):
    # Reinterpreting existing data under a new schema is the failure to prevent.
    GenericStore.open(any_uri, schema=SCHEMA, seal_on_add=True).close()
    with pytest.raises(InvalidRequestError, match="different schema"):
        GenericStore.open(any_uri, schema={**SCHEMA, "extra": "int64"}, seal_on_add=True)


def test_seal_mode_survives_a_reopen(any_uri):
    store = GenericStore.open(any_uri, schema=SCHEMA, seal_on_add=True)
    store.add([{"id": "r1"}])
    store.close()
    reopened = GenericStore.open_existing(any_uri, seal_on_add=False)
    reopened.add([{"id": "r2"}])
    assert len(reopened.list()) == 2, "a store created with seal_on_add keeps it across a reopen"


def test_deferred_seal_mode_survives_a_reopen(any_uri):
    GenericStore.open(any_uri, schema=SCHEMA, seal_on_add=False).close()
    reopened = GenericStore.open_existing(any_uri, seal_on_add=True)
    reopened.add([{"id": "r1"}])
    assert reopened.list() == [], "a deferred-seal store stays deferred"
    reopened.flush()
    assert len(reopened.list()) == 1


def test_memory_stores_are_isolated_by_name(memory_uri):
    a = open_store(memory_uri)
    a.add([{"id": "r1"}])
    b = open_store(memory_uri + "-b")
    assert b.list() == []
    assert [r["id"] for r in open_store(memory_uri).list()] == ["r1"]


def test_stores_of_the_other_kind_are_refused(tmp_path):
    rollouts = str(tmp_path / "rollouts")
    RolloutStore.open(rollouts).close()
    with pytest.raises(InvalidRequestError, match="holds a rollout store, not a generic store"):
        GenericStore.open(rollouts, schema=SCHEMA)
    with pytest.raises(InvalidRequestError, match="holds a rollout store"):
        GenericStore.open_existing(rollouts)
    generic = str(tmp_path / "generic")
    GenericStore.open(generic, SCHEMA).close()
    with pytest.raises(InvalidRequestError, match="holds a generic store, not a rollout store"):
        RolloutStore.open(generic)
    # The refused opens changed nothing: both stores still open as what they are.
    assert GenericStore.open_existing(generic).schema()["columns"][0][0] == "id"
    assert RolloutStore.open(rollouts).list() == []


ALL_TYPES = {
    "id": {"type": "string", "nullable": False},
    "s": {"type": "string", "large": True},
    "i32": "int32",
    "i64": "int64",
    "f32": "float32",
    "f64": "float64",
    "b": "bool",
    "ts": "timestamp",
    "bin": "binary",
    "v": {"type": "vector", "dim": 2},
    "li": {"type": "list", "item": {"type": "int64"}},
    "lf": {"type": "list", "item": {"type": "float32"}},
}


def test_every_column_type_round_trips(any_uri):
    store = GenericStore.open(any_uri, ALL_TYPES, seal_on_add=True)
    aware = datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc)
    store.add(
        [
            {"id": "a", "s": "ü" * 3, "i32": -(2**31), "i64": 2**62, "f32": 0.1, "f64": 0.1,
             "b": True, "ts": aware, "bin": b"\x01", "v": np.array([0.5, 1.5]),
             "li": [1, None, 3], "lf": [float("nan"), 2.5]},
            {"id": "b", "ts": "2024-05-01T00:00:00Z", "f32": float("inf"), "f64": float("nan"),
             "i64": np.int64(7), "v": (1, 2)},
        ]
    )
    a = store.get("a")
    assert a == {"id": "a", "s": "üüü", "i32": -(2**31), "i64": 2**62, "f32": 0.1, "f64": 0.1,
                 "b": True, "ts": 1704164645000006, "bin": "AQ==", "v": [0.5, 1.5],
                 "li": [1, None, 3], "lf": [None, 2.5]}
    # Non-finite floats are None, as the HTTP API writes them (null).
    b = store.get("b")
    assert b == {"id": "b", "ts": 1714521600000000, "f32": None, "f64": None, "i64": 7,
                 "v": [1.0, 2.0]}
    with pytest.raises(InvalidRequestError, match="ts must include timezone information"):
        store.add([{"id": "c", "ts": datetime.datetime(2024, 1, 1)}])
    with pytest.raises(InvalidRequestError, match="column 'i32' expects an int32 integer"):
        store.add([{"id": "c", "i32": 2**31}])


def test_vectors_as_numpy_arrays_share_the_store_memory(any_uri):
    store = open_store(any_uri)
    vectors = np.arange(30, dtype=np.float32).reshape(10, 3)
    store.add([{"id": f"r{i}", "embedding": vectors[i]} for i in range(10)])
    rows = store.list(vectors="numpy")
    assert len(rows) == 10
    for i, row in enumerate(rows):
        v = row["embedding"]
        assert isinstance(v, np.ndarray)
        assert v.dtype == np.float32
        assert v.shape == (3,)
        np.testing.assert_array_equal(v, vectors[i])
        # A read-only view, not a copy.
        assert not v.flags.writeable
        assert not v.flags.owndata
        with pytest.raises(ValueError):
            v[0] = 1
    # Views of one batch share its memory; they stay valid after the rows are dropped.
    first = rows[0]["embedding"]
    del rows
    gc.collect()
    np.testing.assert_array_equal(first, vectors[0])
    one = store.get("r3", vectors="numpy")
    np.testing.assert_array_equal(one["embedding"], vectors[3])
    assert store.get("r3")["embedding"] == [9.0, 10.0, 11.0]
    with pytest.raises(InvalidRequestError, match="vectors: expected 'list' or 'numpy'"):
        store.list(vectors="torch")


def test_closed_store_refuses_calls(any_uri):
    with open_store(any_uri) as store:
        store.add([{"id": "r1"}])
    assert store.closed
    with pytest.raises(InvalidRequestError, match="generic store '.*' is closed"):
        store.list()
    store.close()
