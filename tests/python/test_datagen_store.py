"""What only the embedded strata.DatagenStore has: its URIs, shards, handle lifetime, the GIL
and threads; and the item ids and event ids (strata.DatagenItemId, datagen_event_id,
generate_id) both stores use. The datagen behaviour itself (streams, checkpoints, folds,
resume, failures, overview, trees, blobs and the errors of bad input) is tested on the
embedded and the remote store alike by test_remote_datagen.py."""

import threading
import uuid

import pytest

from strata import (
    DatagenItemId,
    DatagenStore,
    InvalidRequestError,
    RolloutStore,
    _strata,
    datagen_event_id,
    generate_id,
)

RUN = {"run_id": "run-1", "writer_epoch": "writer-1"}


def leaf(name, index=0):
    return {"step_name": name, "step_kind": "leaf", "index": index}


def set_field(name, value, kind="str"):
    return {"name": name, "op": "set", "value": {"kind": kind, "value": value}}


def started(store, item_id, **kwargs):
    return store.open_stream(item_id, **RUN, **kwargs)


# --- Item ids and helpers ---------------------------------------------------------------------


def test_item_ids():
    root = DatagenItemId.from_source_key("5")
    child = root.child("solve_twice", 0)
    grandchild = child.child("judge", 1)
    assert str(grandchild) == "5/solve_twice:0/judge:1"
    assert repr(grandchild) == "DatagenItemId('5/solve_twice:0/judge:1')"
    assert grandchild.origin_step() == "judge"
    assert grandchild.branch_idx() == 1
    assert grandchild.parent() == child
    assert grandchild.root() == root
    assert root.parent() is None and root.origin_step() is None and root.branch_idx() is None
    assert root.is_root() and not child.is_root()
    assert DatagenItemId.parse("5/solve_twice:0/judge:1") == grandchild
    assert DatagenItemId("5") == root
    assert hash(DatagenItemId.parse("5/solve_twice:0")) == hash(child)
    assert len({root, DatagenItemId("5"), child}) == 2
    assert root != child and root != 5
    # An id equals its text and hashes as it, so either finds the other in a dict.
    assert root == "5" and child == "5/solve_twice:0" and root != "6"
    assert {"5/solve_twice:0": 1}[child] == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty datagen item id"),
        ("5/nocolon", "malformed item id segment 'nocolon'"),
        ("5//a:1", "malformed item id segment"),
        ("5/a:x", "non-integer branch index 'x'"),
        ("5/:1", "malformed item id segment"),
    ],
)
def test_item_id_parse_errors(text, message):
    with pytest.raises(InvalidRequestError, match=message):
        DatagenItemId.parse(text)


def test_item_id_construction_errors():
    with pytest.raises(InvalidRequestError, match="empty datagen item id"):
        DatagenItemId.from_source_key("")
    with pytest.raises(InvalidRequestError):
        DatagenItemId.from_source_key("a/b")
    with pytest.raises(InvalidRequestError):
        DatagenItemId("5").child("a:b", 0)
    with pytest.raises(InvalidRequestError):
        DatagenItemId("5").child("a", -1)
    with pytest.raises(InvalidRequestError):
        DatagenItemId("5").child("a/b", 0)


def test_datagen_event_id_is_the_uuid5_of_the_reference():
    name = "item\x00cp\x0017"
    assert datagen_event_id("item", "cp", 17) == str(uuid.uuid5(uuid.NAMESPACE_OID, name))
    assert datagen_event_id(DatagenItemId("item"), "cp", 17) == datagen_event_id("item", "cp", 17)
    with pytest.raises(InvalidRequestError, match="ordinal"):
        datagen_event_id("item", "cp", -1)
    # The vectors of src/store/datagen_event_test.cc.
    assert datagen_event_id("root-1", "root-1\0created", 0) == \
        "439d4ddf-fa7c-5f66-a40f-aa361a4c8ca1"
    assert datagen_event_id("a/gen:2", "a/gen:2\0" "0\0" "gen\0" "3\0" "1", 2) == \
        "3e1465c3-406f-5717-ae29-808e4d98c9fd"
    assert datagen_event_id("src", "cp", 17) == "5b2c780a-c6b7-5657-aa99-add61ff6f134"


def test_generate_id_is_a_time_ordered_uuid():
    ids = [generate_id() for _ in range(200)]
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


# --- URIs, handles and threads -----------------------------------------------------------------


def test_memory_stores_are_isolated_by_name(memory_uri):
    one = DatagenStore.open(memory_uri)
    started(one, "a")
    assert DatagenStore.open(memory_uri).fold_item("a")["status"] == "running"  # shared
    other = DatagenStore.open(memory_uri + "-other")
    assert other.fold_item("a") is None
    assert other.overview()["items"] == 0


def test_reopened_store_sees_every_event(store_uri):
    with DatagenStore.open(store_uri, storage_options={"sync": False}) as store:
        writer = started(store, "a")
        store.append([writer.item_terminal("completed")])
    with DatagenStore.open(store_uri) as reopened:
        assert reopened.root_item_statuses(["a"]) == {"a": "completed"}


def test_writers_with_their_own_shards_share_a_store(store_uri):
    first = DatagenStore.open(store_uri, shard_id="worker-1")
    second = DatagenStore.open(store_uri, shard_id="worker-2")
    first.append([started(first, "a").item_terminal("completed")])
    second.append([started(second, "b").item_terminal("filtered")])
    # Each handle reads the other's events.
    assert first.root_item_statuses(["a", "b"]) == {"a": "completed", "b": "filtered"}
    assert second.overview()["items"] == 2


def test_another_kind_of_store_is_refused(store_uri):
    RolloutStore.open(store_uri).close()
    with pytest.raises(InvalidRequestError, match="holds a rollout store, not a datagen store"):
        DatagenStore.open(store_uri)


def test_close_and_with(memory_uri):
    with DatagenStore.open(memory_uri) as store:
        writer = started(store, "a")
        assert repr(store) == f"DatagenStore({memory_uri!r})"
    assert store.closed
    assert repr(store).endswith("(closed)")
    with pytest.raises(InvalidRequestError, match=f"datagen store '{memory_uri}' is closed"):
        store.fold_item("a")
    store.close()  # idempotent
    # A writer never writes, so it outlives its store; another handle appends its events.
    terminal = writer.item_terminal("completed")
    with DatagenStore.open(memory_uri) as again:
        again.append([terminal])
        assert again.fold_item("a")["status"] == "completed"


def test_calls_release_the_gil(memory_uri):
    store = DatagenStore.open(memory_uri)
    _strata._reset_gil_free_stats()
    writer = started(store, "a")
    store.append([writer.item_terminal("completed")])
    store.fold_item("a")
    store.overview()
    assert _strata._gil_free_stats()["entered"] >= 4


def test_threads_stream_items_into_one_store(memory_uri):
    store = DatagenStore.open(memory_uri)
    errors = []

    def run(worker):
        try:
            for i in range(10):
                writer = started(store, f"w{worker}-{i}")
                store.append_checkpoint(writer.step_completed(leaf("gen"), [set_field("x", "y")]))
                store.append([writer.item_terminal("completed")])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    overview = store.overview()
    assert overview["items"] == overview["completed"] == 40
    assert overview["completed_steps"] == {"gen": 40}
