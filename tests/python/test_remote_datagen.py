"""DatagenStore behaviour (lance-context §5.4, §3.3) through the `datagen_store` fixture, which
runs every test on the embedded strata.DatagenStore and on strata.remote.RemoteDatagenStore
(issue 18: one suite, both paths): stream writers and their events, folds, resume and stale
writers, trees, blobs, failures, overview, root statuses, and the errors of bad input. Then
one test that drives both stores side by side and compares what they return.
test_datagen_store.py holds what only the embedded class has (URIs, shards, threads)."""

from __future__ import annotations

import pytest

import strata
from strata import DatagenStore, DatagenStreamWriter
from strata.errors import InvalidRequestError, NotFoundError
from strata.remote import RemoteDatagenStore

RUN = {"run_id": "run-1", "writer_epoch": "writer-1"}


def leaf(name, index=0, enclosing=None):
    return {"step_name": name, "step_kind": "leaf", "index": index, "enclosing": enclosing,
            "selector": None}


def at(name, index=0, kind="leaf", **more):
    """A position as the stores return it (event column names, absent ones left out)."""
    return {"step_name": name, "step_kind": kind, "step_index": index, **more}


def set_field(name, value, kind="str"):
    return {"name": name, "field_type": kind, "codec_version": 1, "op": "set",
            "value": {"kind": kind, "value": value}}


def append_field(name, value, kind="int"):
    return {"name": name, "op": "append", "value": {"kind": kind, "value": value}}


def started(store, item_id, **kwargs):
    return store.open_stream(item_id, **RUN, **kwargs)


def test_the_remote_module_has_the_embedded_classes():
    import strata.remote as remote

    assert remote.DatagenItemId is strata.DatagenItemId
    assert remote.DatagenStreamWriter is strata.DatagenStreamWriter
    assert remote.datagen_event_id is strata.datagen_event_id


# --- Streams, checkpoints and folds --------------------------------------------------------


def test_open_stream_writer_appends_and_folds(datagen_store):
    writer = datagen_store.open_stream("5", **RUN, query_tags={"lang": "en"})
    assert isinstance(writer, DatagenStreamWriter)
    assert writer.item_id == "5" and writer.attempt == 0 and writer.next_seq == 2

    checkpoint = writer.step_completed(leaf("gen"), [set_field("draft", "v1"),
                                                     set_field("n", 3, "int")])
    assert [e["event_type"] for e in checkpoint] == ["FIELD_SET", "FIELD_SET", "STEP_COMPLETED"]
    assert [e["item_seq"] for e in checkpoint] == [2, 3, 4]
    assert isinstance(datagen_store.append_checkpoint(checkpoint), int)
    assert isinstance(datagen_store.append([writer.item_terminal("completed")]), int)

    folded = datagen_store.fold_item("5")
    assert folded == {
        "item_id": "5",
        "root_item_id": "5",  # no parent_item_id: absent optionals are left out
        "status": "completed",
        "last_item_seq": 5,  # ITEM_CREATED, 2 x FIELD_SET, STEP_COMPLETED, TERMINAL
        "last_attempt": 0,
        "fields": {"draft": {"mode": "set", "value": {"kind": "str", "value": "v1"}},
                   "n": {"mode": "set", "value": {"kind": "int", "value": 3}}},
        "trajectory": [at("gen", item_seq=4)],
        "completed": [at("gen")],
        "query_tags": {"lang": "en"},
    }
    assert list(folded) == ["item_id", "root_item_id", "status", "last_item_seq",
                            "last_attempt", "fields", "trajectory", "completed", "query_tags"]
    assert datagen_store.fold_item("never") is None


def test_writer_events_carry_the_derived_ids(datagen_store):
    writer = started(datagen_store, "item-1")
    assert writer.next_seq == 2
    outer = {"step_name": "outer", "step_kind": "sequence", "index": 0}
    start = writer.step_started(outer)
    checkpoint = writer.step_completed(
        leaf("gen", 3, enclosing="outer"), [set_field("text", "hi"), append_field("n", 2)]
    )
    failed = writer.item_failed(leaf("judge"), "Timeout", error_dump="dump", traceback="tb")
    terminal = writer.item_terminal("filtered")
    assert writer.next_seq == 8
    assert repr(writer) == "DatagenStreamWriter(item_id='item-1', attempt=0, next_seq=8)"

    assert start["event_type"] == "STEP_STARTED"
    assert start["item_seq"] == 2
    assert start["checkpoint_id"] == "item-1\x000\x00outer\x000\x000"
    assert start["event_id"] == strata.datagen_event_id("item-1", start["checkpoint_id"], 0)
    assert [e["event_type"] for e in checkpoint] == ["FIELD_SET", "FIELD_APPEND", "STEP_COMPLETED"]
    assert [e["item_seq"] for e in checkpoint] == [3, 4, 5]
    assert {e["checkpoint_id"] for e in checkpoint} == {"item-1\x000\x00gen\x003\x001"}
    assert [e["event_id"] for e in checkpoint] == [
        strata.datagen_event_id("item-1", checkpoint[0]["checkpoint_id"], ordinal)
        for ordinal in (1, 2, 0)
    ]
    field = checkpoint[1]
    assert {k: v for k, v in field.items() if k != "event_ts"} == {
        "event_id": field["event_id"], "item_id": "item-1", "root_item_id": "item-1",
        "item_seq": 4, "checkpoint_id": "item-1\x000\x00gen\x003\x001",
        "event_type": "FIELD_APPEND", "step_name": "gen", "step_kind": "leaf", "step_index": 3,
        "enclosing_step": "outer", "attempt": 0, "run_id": "run-1", "writer_epoch": "writer-1",
        "field_name": "n", "field_type": "int", "codec_version": 1,
        "value": {"kind": "int", "value": 2}, "schema_version": 2,
    }
    assert list(field) == ["event_id", "item_id", "root_item_id", "item_seq", "checkpoint_id",
                           "event_type", "step_name", "step_kind", "step_index",
                           "enclosing_step", "attempt", "run_id", "writer_epoch", "field_name",
                           "field_type", "codec_version", "value", "event_ts",
                           "schema_version"]
    assert failed["status"] == "failed" and failed["error_type"] == "Timeout"
    assert failed["error_dump"] == "dump" and failed["traceback"] == "tb"
    assert failed["checkpoint_id"] == "item-1\x000\x00judge\x000\x002"
    assert terminal["status"] == "filtered"
    assert terminal["checkpoint_id"] == "item-1\x00terminal\x007"
    for event in [start, *checkpoint, failed, terminal]:
        assert event["run_id"] == "run-1" and event["writer_epoch"] == "writer-1"
        assert event["item_id"] == event["root_item_id"] == "item-1"
        assert event["attempt"] == 0 and event["schema_version"] == 2
        assert event["event_ts"].endswith("Z") and len(event["event_ts"]) == 27
        assert None not in event.values()

    # The writer never writes: the store holds only ITEM_CREATED until the events go in.
    assert datagen_store.fold_item("item-1")["last_item_seq"] == 1
    datagen_store.append([start])
    datagen_store.append_checkpoint(checkpoint)
    datagen_store.append([failed, terminal])
    folded = datagen_store.fold_item("item-1")
    assert folded["status"] == "filtered"
    assert folded["fields"]["n"] == {"mode": "append", "values": [{"kind": "int", "value": 2}]}
    assert folded["started"] == [at("outer", kind="sequence")]
    assert folded["trajectory"] == [at("gen", 3, enclosing_step="outer", item_seq=5)]


def test_a_child_writer_names_its_root_and_parent(datagen_store):
    writer = started(datagen_store, strata.DatagenItemId("r").child("fan", 2))
    event = writer.item_terminal("completed")
    assert event["item_id"] == "r/fan:2"
    assert event["root_item_id"] == "r" and event["parent_item_id"] == "r"
    explicit = started(datagen_store, "r/fan:3", parent_item_id="elsewhere")
    assert explicit.item_terminal("completed")["parent_item_id"] == "elsewhere"
    datagen_store.append([event])
    assert datagen_store.fold_item("r/fan:2")["parent_item_id"] == "r"


def test_every_value_kind_and_appends(datagen_store):
    writer = started(datagen_store, "v")
    fields = [
        set_field("s", "text ü"),
        set_field("i", -(2**62), "int"),
        set_field("f", 0.25, "float"),
        set_field("whole", 2, "float"),  # an int given for a float is a float
        set_field("b", True, "bool"),
        set_field("j", {"b": [1, 2, {"c": None}], "a": ("x", 1.5)}, "json"),
        {"name": "raw", "value": {"kind": "blob", "bytes": b"\x00\xffdata", "checksum": "c1"}},
    ]
    checkpoint = writer.step_completed(leaf("gen"), fields)
    # The events carry the values as the store reads them back.
    assert checkpoint[3]["value"] == {"kind": "float", "value": 2.0}
    assert checkpoint[5]["value"] == {"kind": "json", "value": {"a": ["x", 1.5],
                                                                 "b": [1, 2, {"c": None}]}}
    assert list(checkpoint[5]["value"]["value"]) == ["a", "b"]
    assert checkpoint[6]["value"] == {"kind": "blob", "bytes": b"\x00\xffdata", "size": 6,
                                      "checksum": "c1"}
    assert checkpoint[6]["field_type"] == "blob"
    datagen_store.append_checkpoint(checkpoint)
    for i in range(3):
        datagen_store.append_checkpoint(writer.step_completed(
            {"step_name": "loop", "step_kind": "loop", "step_index": i},
            [append_field("items", i)]))

    got = datagen_store.fold_item("v")["fields"]
    assert got["s"]["value"] == {"kind": "str", "value": "text ü"}
    assert got["i"]["value"] == {"kind": "int", "value": -(2**62)}
    assert got["f"]["value"] == {"kind": "float", "value": 0.25}
    assert got["whole"]["value"] == {"kind": "float", "value": 2.0}
    assert isinstance(got["whole"]["value"]["value"], float)
    assert got["b"]["value"] == {"kind": "bool", "value": True}
    assert got["j"]["value"] == {"kind": "json", "value": {"a": ["x", 1.5],
                                                          "b": [1, 2, {"c": None}]}}
    assert got["items"] == {"mode": "append",
                            "values": [{"kind": "int", "value": i} for i in range(3)]}
    # A lazy fold leaves blob bytes out; an eager one carries them.
    assert got["raw"]["value"] == {"kind": "blob", "size": 6, "checksum": "c1"}
    eager = datagen_store.fold_item("v", load_blobs=True)["fields"]["raw"]["value"]
    assert eager == {"kind": "blob", "bytes": b"\x00\xffdata", "size": 6, "checksum": "c1"}
    trajectory = datagen_store.fold_item("v")["trajectory"]
    assert [c["step_index"] for c in trajectory] == [0, 0, 1, 2]


def test_fields_are_the_references_field_mappings_only(datagen_store):
    """step_completed takes a list of {name, value: {kind, ...}, op?, field_type?,
    codec_version?} (lance-context's DatagenFieldWrite); neither a mapping of names to values
    nor plain Python values stand in for it."""
    writer = started(datagen_store, "a")
    with pytest.raises(TypeError, match="fields must be an iterable of field mappings"):
        writer.step_completed(leaf("g"), {"x": 1})
    with pytest.raises(InvalidRequestError,
                       match=r"^fields\[0\]\.value: expected a datagen value object"):
        writer.step_completed(leaf("g"), [{"name": "x", "value": 1}])
    with pytest.raises(TypeError, match=r"^fields\[0\] must be a mapping, found tuple"):
        writer.step_completed(leaf("g"), [("x", 1)])
    # A generator of field mappings is a list of them.
    events = writer.step_completed(leaf("g"), (set_field(n, n) for n in ("x", "y")))
    assert [e.get("field_name") for e in events] == ["x", "y", None]


def test_fold_rules_are_the_engines(datagen_store):
    writer = started(datagen_store, "k")
    datagen_store.append_checkpoint(writer.step_completed(leaf("a"), [set_field("x", 1, "int")]))
    datagen_store.append_checkpoint(writer.step_completed(leaf("b"), [set_field("x", "one")]))
    with pytest.raises(InvalidRequestError, match="field 'x' changes value kind from int to str"):
        datagen_store.fold_item("k")


# --- Retries, resume and stale writers ---------------------------------------------------------


def test_a_retried_checkpoint_collapses(datagen_store):
    writer = started(datagen_store, "a")
    checkpoint = writer.step_completed(leaf("gen"), [append_field("xs", 1)])
    datagen_store.append_checkpoint(checkpoint)
    datagen_store.append_checkpoint(checkpoint)  # a retry after an unknown outcome
    started(datagen_store, "a")  # a re-opened stream re-appends the same ITEM_CREATED
    folded = datagen_store.fold_item("a")
    assert folded["fields"]["xs"]["values"] == [{"kind": "int", "value": 1}]
    assert folded["last_item_seq"] == 3
    assert len(folded["trajectory"]) == 1
    assert datagen_store.overview()["completed_steps"] == {"gen": 1}


def test_resume_stream_bumps_attempt(datagen_store):
    writer = started(datagen_store, "5")
    datagen_store.append_checkpoint(writer.step_completed(leaf("gen"),
                                                          [set_field("draft", "v1")]))
    resumed = datagen_store.resume_stream("5", run_id="run-1", writer_epoch="writer-2")
    assert isinstance(resumed, DatagenStreamWriter)
    assert resumed.attempt == 1 and resumed.next_seq == writer.next_seq == 4
    # The same step again under the new attempt: new checkpoint ids (ordinals restart at 0).
    checkpoint = resumed.step_completed(leaf("gen"), [set_field("draft", "v2")])
    assert checkpoint[0]["checkpoint_id"] == "5\x001\x00gen\x000\x000"
    assert checkpoint[0]["writer_epoch"] == "writer-2" and checkpoint[0]["attempt"] == 1
    datagen_store.append_checkpoint(checkpoint)
    datagen_store.append([resumed.item_terminal("completed")])

    folded = datagen_store.fold_item("5")
    assert folded["last_attempt"] == 1
    assert folded["fields"]["draft"] == {"mode": "set", "value": {"kind": "str", "value": "v2"}}
    assert len(folded["trajectory"]) == 2
    # Resuming a resumed item counts on; an int epoch is its decimal text.
    again = datagen_store.resume_stream(strata.DatagenItemId("5"), run_id="run-1",
                                        writer_epoch=3)
    assert again.attempt == 2
    assert again.item_terminal("completed")["writer_epoch"] == "3"


def test_resume_stream_none_when_never_started(datagen_store):
    assert datagen_store.resume_stream("9", **RUN) is None
    # Events without ITEM_CREATED do not start an item either.
    orphan = started(datagen_store, "x").step_completed(leaf("gen"), [])
    orphan = [dict(e, item_id="9", root_item_id="9") for e in orphan]
    datagen_store.append_checkpoint(orphan)
    assert datagen_store.resume_stream("9", **RUN) is None
    assert datagen_store.fold_item("9") is None


def test_a_resumed_child_keeps_its_root_and_parent(datagen_store):
    started(datagen_store, "p/split:1", parent_item_id="p")
    resumed = datagen_store.resume_stream("p/split:1", run_id="run-2", writer_epoch="w2")
    event = resumed.item_failed(leaf("judge"), "Oops")
    assert event["root_item_id"] == "p" and event["parent_item_id"] == "p"
    assert event["run_id"] == "run-2" and event["attempt"] == 1


def test_a_stale_writer_is_refused(datagen_store, backend):
    """writer_epoch is the writers' identity, not a lock: neither lance-context nor strata
    refuses a write for its epoch alone. A stale writer (the one a resume replaced) is
    refused where its events contradict the new owner's: at the same item_seq in one batch,
    and in every fold once both are stored."""
    stale = datagen_store.open_stream("7", run_id="run-1", writer_epoch="writer-1")
    datagen_store.append_checkpoint(stale.step_completed(leaf("gen"), [set_field("x", "a")]))
    fresh = datagen_store.resume_stream("7", run_id="run-2", writer_epoch="writer-2")
    # Both writers go on at the same item_seq, under different attempts (so different ids).
    late = stale.item_failed(leaf("judge"), "Stale")
    mine = fresh.item_failed(leaf("judge"), "Fresh")
    assert late["item_seq"] == mine["item_seq"] == 4
    assert late["event_id"] != mine["event_id"]
    with pytest.raises(InvalidRequestError) as raised:
        datagen_store.append([mine, late])
    assert str(raised.value) == "item '7' has duplicate item_seq 4 in one batch"
    assert raised.value.code == "INVALID_REQUEST"
    if backend == "embedded":  # the engine's status name; a server's error has its code only
        assert raised.value.status == "InvalidArgument"
    assert datagen_store.item_failures("7") == []  # nothing was written

    datagen_store.append([mine])
    datagen_store.append([late])
    with pytest.raises(InvalidRequestError, match="item '7' has conflicting events at item_seq 4"):
        datagen_store.fold_item("7")
    # An empty epoch is refused outright.
    with pytest.raises(InvalidRequestError, match="writer_epoch must not be empty"):
        datagen_store.open_stream("8", run_id="run-1", writer_epoch="")
    assert datagen_store.fold_item("8") is None
    started(datagen_store, "9")
    no_epoch = datagen_store.resume_stream("9", run_id="run-1", writer_epoch="")
    with pytest.raises(InvalidRequestError,
                       match=r"^event '[0-9a-f-]+': writer_epoch must not be empty$"):
        no_epoch.item_terminal("completed")
    assert no_epoch.next_seq == 2


def test_a_stale_terminal_replaces_the_new_owners(datagen_store):
    """A TERMINAL's id depends on the item and item_seq only (lance-context's rule), so the
    stale writer's and the new owner's at one item_seq are the same row: the newest wins."""
    stale = started(datagen_store, "t")
    fresh = datagen_store.resume_stream("t", run_id="run-2", writer_epoch="writer-2")
    mine = fresh.item_terminal("completed")
    late = stale.item_terminal("filtered")
    assert mine["event_id"] == late["event_id"]
    with pytest.raises(InvalidRequestError, match="was reused with different content"):
        datagen_store.append([mine, late])
    datagen_store.append([mine])
    datagen_store.append([late])
    assert datagen_store.fold_item("t")["status"] == "filtered"


# --- Reads: failures, overview, statuses, trees, blobs ------------------------------------------


def test_item_failed_is_a_failure_lens_not_terminal(datagen_store):
    writer = started(datagen_store, "5")
    datagen_store.append([writer.item_failed(leaf("gen"), "ValueError", error_dump="boom",
                                             traceback="tb")])
    datagen_store.append([writer.item_failed(leaf("gen", 1), "KeyError")])
    assert datagen_store.item_failures("5") == [
        {"at": at("gen", item_seq=2), "run_id": "run-1", "attempt": 0,
         "error_type": "ValueError", "error_dump": "boom", "traceback": "tb"},
        {"at": at("gen", 1, item_seq=3), "run_id": "run-1", "attempt": 0,
         "error_type": "KeyError"},  # absent error_dump and traceback are left out
    ]
    assert datagen_store.fold_item("5")["status"] == "running"  # FAILED does not end the item
    assert datagen_store.item_failures("never") == []


def test_overview_counts_roots_failures_and_steps(datagen_store):
    writers = {}
    for key, end in [("r1", "completed"), ("r2", "filtered"), ("r3", None), ("r4", None)]:
        writers[key] = writer = started(datagen_store, key)
        datagen_store.append_checkpoint(writer.step_completed(leaf("gen"), [set_field("x", key)]))
        if end:
            datagen_store.append([writer.item_terminal(end)])
    datagen_store.append([writers["r3"].item_failed(leaf("judge"), "Timeout")])
    retry = datagen_store.resume_stream("r4", run_id="run-2", writer_epoch="writer-2")
    datagen_store.append([retry.item_failed(leaf("judge"), "ValueError")])
    # A sub-item counts its steps and failures, not as an item.
    child = started(datagen_store, "r1/split:0")
    datagen_store.append([child.item_failed(leaf("judge"), "Timeout")])
    datagen_store.append_checkpoint(child.step_completed(leaf("sub"), []))

    overview = datagen_store.overview()
    assert overview == {
        "items": 4,
        "running": 2,  # r3 and r4 (a root whose last attempt failed counts as running)
        "completed": 1,
        "filtered": 1,
        "failures": 3,
        "failures_by_error_type": {"Timeout": 2, "ValueError": 1},
        "failures_by_run": {
            "run-1": {"failures": 2, "failures_by_error_type": {"Timeout": 2},
                      "sample_root_item_ids": ["r1", "r3"]},
            "run-2": {"failures": 1, "failures_by_error_type": {"ValueError": 1},
                      "sample_root_item_ids": ["r4"]},
        },
        "completed_steps": {"gen": 4, "sub": 1},
    }
    assert list(overview) == ["items", "running", "completed", "filtered", "failures",
                              "failures_by_error_type", "failures_by_run", "completed_steps"]


def test_root_item_statuses(datagen_store):
    datagen_store.append([started(datagen_store, "a").item_terminal("completed")])
    started(datagen_store, "b")
    datagen_store.append([started(datagen_store, "c").item_terminal("filtered")])
    datagen_store.append([started(datagen_store, "d,e").item_terminal("completed")])
    failing = started(datagen_store, "f")
    datagen_store.append([failing.item_failed(leaf("gen"), "Timeout")])

    statuses = datagen_store.root_item_statuses(
        ["f", "a", "b", strata.DatagenItemId("c"), "d,e", "never", "a"])
    assert statuses == {"a": "completed", "b": "running", "c": "filtered", "d,e": "completed",
                        "f": "running"}
    assert list(statuses) == ["a", "b", "c", "d,e", "f"]
    assert datagen_store.root_item_statuses([]) == {}
    many = [f"missing-{i}" for i in range(450)] + ["a"]
    assert datagen_store.root_item_statuses(iter(many)) == {"a": "completed"}
    with pytest.raises(TypeError):
        datagen_store.root_item_statuses("a")
    with pytest.raises(TypeError):
        datagen_store.root_item_statuses([5])


def test_item_tree_links_parent_and_child(datagen_store):
    root = started(datagen_store, "9")
    datagen_store.append([root.item_terminal("completed")])
    for i in (1, 0):
        child = started(datagen_store, f"9/expand:{i}", parent_item_id="9")
        datagen_store.append([child.item_terminal("filtered")])
    # Without parent_item_id the id's path names the parent.
    grandchild = started(datagen_store, strata.DatagenItemId.parse("9/expand:0").child("split", 0))
    assert grandchild.item_id == "9/expand:0/split:0"
    # A parent outside the tree makes a second root.
    started(datagen_store, "9/orphan:0", parent_item_id="elsewhere")

    tree = datagen_store.item_tree("9")
    assert tree["roots"] == ["9", "9/orphan:0"]
    assert list(tree["nodes"]) == ["9", "9/expand:0", "9/expand:0/split:0", "9/expand:1",
                                   "9/orphan:0"]
    assert tree["nodes"]["9"]["item"] == datagen_store.fold_item("9")
    assert tree["nodes"]["9"]["children"] == ["9/expand:0", "9/expand:1"]
    assert tree["nodes"]["9/expand:0"]["item"]["parent_item_id"] == "9"
    assert tree["nodes"]["9/expand:0"]["children"] == ["9/expand:0/split:0"]
    assert tree["nodes"]["9/expand:0/split:0"]["item"]["status"] == "running"
    assert tree["nodes"]["9/expand:1"] == {"item": datagen_store.fold_item("9/expand:1"),
                                           "children": []}
    assert datagen_store.item_tree("nothing") == {"roots": [], "nodes": {}}


def test_blobs_lazy_and_eager(datagen_store):
    writer = started(datagen_store, "5")
    payload = bytes(range(256)) * 40
    shot = {"name": "screenshot", "field_type": "blob", "codec_version": 1, "op": "set",
            "value": {"kind": "blob", "bytes": payload, "size": len(payload)}}
    raw = {"name": "raw", "value": {"kind": "blob", "bytes": bytearray(b"\x00\x01")}}
    checkpoint = writer.step_completed(leaf("shot"), [shot, raw, set_field("s", "x")])
    datagen_store.append_checkpoint(checkpoint)
    datagen_store.append([writer.item_terminal("completed")])

    folded = datagen_store.fold_item("5")
    assert folded["fields"]["screenshot"]["value"] == {"kind": "blob", "size": len(payload)}
    assert folded["blob_event_ids"] == {"raw": checkpoint[1]["event_id"],
                                        "screenshot": checkpoint[0]["event_id"]}
    assert datagen_store.load_blob(folded, "screenshot") == payload
    assert datagen_store.load_blob(folded, "raw") == b"\x00\x01"
    # A non-blob or absent field, or a fold without blobs, resolves to None.
    assert datagen_store.load_blob(folded, "missing") is None
    assert datagen_store.load_blob(folded, "s") is None
    assert datagen_store.load_blob({"item_id": "5"}, "screenshot") is None
    with pytest.raises(TypeError, match="folded must be a mapping, found list"):
        datagen_store.load_blob([], "screenshot")
    assert datagen_store.get_blob(checkpoint[0]["event_id"]) == payload
    assert datagen_store.get_blob(checkpoint[2]["event_id"]) is None  # not a blob
    assert datagen_store.get_blob("no-such-event") is None

    eager = datagen_store.fold_item("5", load_blobs=True)
    assert eager["fields"]["screenshot"]["value"]["bytes"] == payload
    # Base64 text is taken for bytes, as the HTTP API takes it.
    b64 = {"name": "b64", "value": {"kind": "blob", "bytes": "cGF5bG9hZA=="}}
    datagen_store.append_checkpoint(writer.step_completed(leaf("shot", 1), [b64]))
    assert datagen_store.load_blob(datagen_store.fold_item("5"), "b64") == b"payload"


# --- Raw events and their errors ---------------------------------------------------------------


def test_hand_built_events_with_defaults(datagen_store):
    created = {"event_id": "e1", "item_id": "h", "root_item_id": "h", "item_seq": 1,
               "checkpoint_id": "c1", "event_type": "ITEM_CREATED", "run_id": "r",
               "writer_epoch": 3, "status": "running", "ignored_key": object()}
    done = {"event_id": "e2", "item_id": "h", "root_item_id": "h", "item_seq": 2.0,
            "checkpoint_id": "c2", "event_type": "TERMINAL", "run_id": "r",
            "writer_epoch": "3", "status": "completed", "attempt": None,
            "event_ts": "2024-05-01T12:00:00Z"}
    assert datagen_store.append(created) == datagen_store.version()  # one mapping, one event
    datagen_store.append([done])
    folded = datagen_store.fold_item("h")
    assert folded["status"] == "completed" and folded["last_attempt"] == 0
    assert folded["last_item_seq"] == 2
    assert datagen_store.append([]) == datagen_store.version()  # an empty batch writes nothing
    with pytest.raises(TypeError, match=r"^events\[0\] must be a mapping, found int$"):
        datagen_store.append([5])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"run_id": None}, "events[0].run_id is required"),
        ({"item_seq": "1"}, 'events[0].item_seq: expected an integer, found string "1"'),
        ({"item_seq": 1.5}, "events[0].item_seq: expected an integer, found number 1.5"),
        ({"attempt": 2**31}, "events[0].attempt: 2147483648 is out of range for a 32-bit "
                             "integer"),
        ({"event_type": "NOPE"}, "events[0].event_type: unsupported datagen event type 'NOPE'"),
        ({"step_kind": "odd"}, "events[0].step_kind: unsupported datagen step kind 'odd'"),
        ({"status": "done"}, "events[0].status: unsupported datagen item status 'done'"),
        ({"writer_epoch": 1.5}, "events[0].writer_epoch: expected a string (or an integer), "
                                "found number 1.5"),
        ({"value": {"kind": "money", "value": 1}},
         "events[0].value.kind: unsupported datagen value kind 'money'"),
        ({"value": {"kind": "int"}}, "events[0].value: datagen value of kind 'int' is missing "
                                     "'value'"),
        ({"value": {"value": 1}}, "events[0].value.kind is required"),
        ({"value": 5}, "events[0].value: expected a datagen value object"),
        ({"value": {"kind": "json", "value": float("nan")}},
         "events[0].value.value: nan is not a JSON number"),
        ({"value": {"kind": "blob", "bytes": "abc"}},
         "events[0].value.bytes: invalid base64: length 3 is not a multiple of 4"),
        ({"value": {"kind": "blob", "bytes": "ab=c"}},
         "events[0].value.bytes: invalid base64: padding '=' before the end '=' (0x3d) at "
         "position 2"),
        ({"value": {"kind": "blob", "bytes": b"ab", "size": -1}},
         "events[0].value.size: must not be negative, got -1"),
        ({"query_tags": {1: "x"}}, "events[0].query_tags: object keys must be strings"),
        ({"event_ts": "yesterday"}, "events[0].event_ts: "),
        ({"run_id": ""}, "run_id must not be empty"),
        ({"item_seq": -1}, "item_seq must not be negative"),
    ],
)
def test_bad_events_are_refused_naming_the_problem(datagen_store, change, message):
    writer = started(datagen_store, "a")
    event = dict(writer.step_completed(leaf("gen"), [set_field("x", "y")])[0], **change)
    with pytest.raises(InvalidRequestError) as raised:
        datagen_store.append([event])
    assert message in str(raised.value)
    assert datagen_store.fold_item("a")["last_item_seq"] == 1  # nothing written


def test_batch_and_checkpoint_rules(datagen_store):
    writer = started(datagen_store, "a")
    checkpoint = writer.step_completed(leaf("gen"), [set_field("x", "y")])
    changed = dict(checkpoint[0], value={"kind": "str", "value": "other"})
    with pytest.raises(InvalidRequestError,
                       match=f"event_id '{checkpoint[0]['event_id']}' was reused with different"):
        datagen_store.append([checkpoint[0], changed])
    with pytest.raises(InvalidRequestError, match="^checkpoint batch must not be empty$"):
        datagen_store.append_checkpoint([])
    with pytest.raises(InvalidRequestError, match="exactly one STEP_COMPLETED event, found 0"):
        datagen_store.append_checkpoint(checkpoint[:1])
    second = writer.step_completed(leaf("gen"), [])
    with pytest.raises(InvalidRequestError, match="checkpoint batch mixes checkpoint_id"):
        datagen_store.append_checkpoint(checkpoint + second)
    terminal = writer.item_terminal("completed")
    with pytest.raises(InvalidRequestError, match="may contain only FIELD_SET, FIELD_APPEND"):
        datagen_store.append_checkpoint([terminal])
    bad = dict(checkpoint[0], event_type="NOT_A_TYPE")
    with pytest.raises(InvalidRequestError, match="NOT_A_TYPE"):
        datagen_store.append([bad])
    assert datagen_store.fold_item("a")["last_item_seq"] == 1  # nothing written by any of them


# (writer call, error class, message): each bad input is refused, naming what is wrong.
BAD_WRITER_INPUT = [
    (lambda w: w.step_started({"step_name": "s", "index": 0}),
     InvalidRequestError, r"^position\.step_kind is required$"),
    (lambda w: w.step_started({"step_kind": "loop", "index": 0}),
     InvalidRequestError, r"^position\.step_name is required$"),
    (lambda w: w.step_started({"step_name": "s", "step_kind": "loop"}),
     InvalidRequestError, r"^position\.index is required$"),
    (lambda w: w.step_started({"step_name": "s", "step_kind": "nope", "index": 0}),
     InvalidRequestError, r"^position\.step_kind: unsupported datagen step kind 'nope'$"),
    (lambda w: w.step_started({"step_name": "s", "step_kind": "loop", "index": 0,
                               "step_index": 0}),
     InvalidRequestError, r"^position: give index or step_index, not both$"),
    (lambda w: w.step_started({"step_name": 5, "step_kind": "loop", "index": 0}),
     InvalidRequestError, r"^position\.step_name: expected a string, found number 5$"),
    (lambda w: w.step_started({"step_name": "s", "step_kind": "loop", "index": True}),
     InvalidRequestError, r"^position\.index: expected an integer, found boolean true$"),
    (lambda w: w.step_started({"step_name": "s", "step_kind": "loop", "index": 0,
                               "enclosing": ["x"]}),
     InvalidRequestError, r"^position\.enclosing: expected a string, found array$"),
    (lambda w: w.step_started(["s"]), TypeError, r"^position must be a mapping, found list$"),
    (lambda w: w.step_completed(leaf("g"), [dict(set_field("x", "y"), op="put")]),
     InvalidRequestError,
     r"^fields\[0\]\.op: unsupported field op 'put': valid ops are 'set', 'append'$"),
    (lambda w: w.step_completed(leaf("g"), [{"name": "x"}]),
     InvalidRequestError, r"^fields\[0\]\.value is required$"),
    (lambda w: w.step_completed(leaf("g"), [{"value": {"kind": "int", "value": 1}}]),
     InvalidRequestError, r"^fields\[0\]\.name is required$"),
    (lambda w: w.step_completed(leaf("g"), [dict(set_field("x", 1), codec_version="1")]),
     InvalidRequestError,
     r'^fields\[0\]\.codec_version: expected a 32-bit integer, found string "1"$'),
    (lambda w: w.step_completed(leaf("g"), [set_field("x", float("nan"), "json")]),
     InvalidRequestError, r"^fields\[0\]\.value\.value: nan is not a JSON number$"),
    (lambda w: w.step_completed(leaf("g"), [set_field("x", {"k": {1, 2}}, "json")]),
     InvalidRequestError, r"^fields\[0\]\.value\.value\.k: expected a JSON value, found set$"),
    (lambda w: w.step_completed(leaf("g"), [set_field("x", 2**63, "int")]),
     InvalidRequestError,
     r"^fields\[0\]\.value\.value: 9223372036854775808 is out of range for an integer$"),
    (lambda w: w.step_completed(leaf("g"), [set_field("x", "1.5", "float")]),
     InvalidRequestError, r'^fields\[0\]\.value\.value: expected a number, found string'),
    (lambda w: w.step_completed(leaf("g"), [set_field("x", 1, "bool")]),
     InvalidRequestError, r"^fields\[0\]\.value\.value: expected a boolean, found number 1$"),
    (lambda w: w.step_completed(leaf("g"), [{"name": "img",
                                             "value": {"kind": "blob", "size": 3}}]),
     InvalidRequestError, r"^blob event '[0-9a-f-]+' has no bytes on the write path$"),
    (lambda w: w.step_completed(leaf("g"), [{"name": "img", "value": {
        "kind": "blob", "bytes": b"ab", "size": 3}}]),
     InvalidRequestError, r"^blob event '[0-9a-f-]+' declares 3 bytes but contains 2$"),
    (lambda w: w.step_completed(leaf("g"), "xy"), TypeError,
     r"^fields must be an iterable of field mappings, found str$"),
    (lambda w: w.item_terminal("running"), InvalidRequestError,
     r"^item_terminal needs status completed or filtered, got running$"),
    (lambda w: w.item_terminal("done"), InvalidRequestError,
     r"^unsupported datagen item status 'done'$"),
    (lambda w: w.item_terminal(1), TypeError, r"^status must be a str, found int$"),
    (lambda w: w.item_failed(leaf("g"), None), TypeError,
     r"^error_type must be a str, found NoneType$"),
]


@pytest.mark.parametrize(
    "call, error, message", BAD_WRITER_INPUT,
    ids=[f"case{i}" for i in range(len(BAD_WRITER_INPUT))],  # store names take no regexes
)
def test_bad_writer_input(datagen_store, call, error, message):
    writer = started(datagen_store, "a")
    with pytest.raises(error, match=message):
        call(writer)
    # It did not move the writer on.
    assert writer.next_seq == 2
    assert writer.step_started(leaf("g"))["checkpoint_id"] == "a\x000\x00g\x000\x000"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"item_id": ""}, InvalidRequestError, "^empty datagen item id$"),
        ({"item_id": "a/b"}, InvalidRequestError, "^malformed item id segment 'b'"),
        ({"item_id": 5}, TypeError, "^item_id must be a str, found int$"),
        ({"run_id": None}, TypeError, "^run_id must be a str, found NoneType$"),
        ({"run_id": ""}, InvalidRequestError, "^event '[0-9a-f-]+': run_id must not be empty$"),
        ({"writer_epoch": 1.5}, TypeError, "^writer_epoch must be a str, found float$"),
        ({"query_tags": {"x": float("inf")}}, InvalidRequestError,
         r"^query_tags\.x: inf is not a JSON number$"),
    ],
    ids=["empty", "malformed", "not-text", "no-run", "empty-run", "float-epoch", "tags"],
)
def test_bad_open_stream_arguments(datagen_store, kwargs, error, message):
    arguments = {"item_id": "a", **RUN, **kwargs}
    with pytest.raises(error, match=message):
        datagen_store.open_stream(arguments.pop("item_id"), **arguments)
    assert datagen_store.overview()["items"] == 0  # nothing written


# --- Handles ---------------------------------------------------------------------------------


def test_another_handle_reads_and_writes_the_same_log(open_datagen, datagen_store):
    writer = started(datagen_store, "1")
    other = open_datagen()
    assert other.fold_item("1")["status"] == "running"
    assert isinstance(other.version(), int)
    step = writer.step_started({"step_name": "outer", "step_kind": "sequence", "index": 0})
    assert step["event_type"] == "STEP_STARTED" and step["step_index"] == 0
    other.append([step])
    assert other.fold_item("1")["started"] == [at("outer", kind="sequence")]
    assert datagen_store.fold_item("1")["started"] == [at("outer", kind="sequence")]


def test_closed_store_refuses_calls_but_its_writers_go_on(datagen_store):
    writer = started(datagen_store, "a")
    datagen_store.close()
    assert datagen_store.closed
    with pytest.raises(InvalidRequestError, match="is closed"):
        datagen_store.fold_item("a")
    with pytest.raises(InvalidRequestError, match="is closed"):
        datagen_store.append([])
    datagen_store.close()  # idempotent
    assert writer.item_terminal("completed")["item_seq"] == 2


def test_connect_names_a_missing_store(base_url, store_name):
    for connect in (RemoteDatagenStore.connect, DatagenStore.connect):
        with pytest.raises(NotFoundError, match=f"^Datagen store '{store_name}' does not exist$"):
            connect(base_url, store_name)
    created = DatagenStore.connect_or_create(base_url, store_name)
    assert isinstance(created, RemoteDatagenStore)
    with DatagenStore.connect(base_url, store_name) as again:
        assert again.name == store_name and again.overview()["items"] == 0
    created.close()


# --- Both stores side by side ------------------------------------------------------------------


def _without_timestamps(value):
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "event_ts"}
    return value


def test_both_stores_build_and_read_the_same(base_url, store_name, tmp_path):
    """The same pipeline run on an embedded and a remote store: equal events (but their
    timestamps), equal folds, failures, trees, statuses and overviews, key order included."""
    stores = [DatagenStore.open(str(tmp_path / "embedded")),
              RemoteDatagenStore.connect_or_create(base_url, store_name)]
    seen = []
    for store in stores:
        events = []
        writer = store.open_stream("doc", run_id="run-1", writer_epoch="w1",
                                   query_tags={"lang": "en", "n": [1, 2.5]})
        events.append(writer.step_started({"step_name": "outer", "step_kind": "loop",
                                           "step_index": 0, "selector_step": "pick"}))
        events.extend(writer.step_completed(
            leaf("gen", 0, enclosing="outer"),
            [set_field("text", "hi"), append_field("scores", 2),
             {"name": "img", "op": "set", "field_type": "png", "codec_version": 3,
              "value": {"kind": "blob", "bytes": b"\x89PNG", "checksum": "sum"}},
             set_field("meta", {"z": 1, "a": [True, None]}, "json"),
             set_field("ratio", 0.5, "float")]))
        events.append(writer.item_failed(leaf("judge"), "Timeout", traceback="tb"))
        child = store.open_stream(strata.DatagenItemId("doc").child("fan", 0), run_id="run-1",
                                  writer_epoch="w1")
        events.append(child.item_terminal("filtered"))
        store.append([events[0]])
        store.append_checkpoint(events[1:7])
        store.append(events[7:])
        resumed = store.resume_stream("doc", run_id="run-2", writer_epoch="w2")
        events.append(resumed.item_terminal("completed"))
        store.append(events[-1:])
        seen.append({
            "events": _without_timestamps(events),
            "writer": (type(resumed), resumed.item_id, resumed.attempt, resumed.next_seq),
            "fold": store.fold_item("doc"),
            "eager": store.fold_item("doc", load_blobs=True),
            "failures": store.item_failures("doc"),
            "tree": store.item_tree("doc"),
            "statuses": store.root_item_statuses(["doc", "nope"]),
            "overview": store.overview(),
            "blob": store.load_blob(store.fold_item("doc"), "img"),
        })
        store.close()
    embedded, remote = seen
    for key in embedded:
        assert remote[key] == embedded[key], key
        assert repr(remote[key]) == repr(embedded[key]), key  # key order too
