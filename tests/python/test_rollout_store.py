"""strata.RolloutStore: lance-context's RolloutStore behaviour (round trips, filters,
trajectories, blobs, checkout), its errors, and strata's URIs and handle lifetime."""

import datetime
import gc
import math
import os
import pathlib
import uuid

import numpy as np
import pytest

from strata import InvalidRequestError, NotFoundError, RolloutStore


def test_add_dict_list_get(any_uri):
    store = RolloutStore.open(any_uri)
    assert store.version() >= 0
    resp = store.add(
        {
            "id": "row-0",
            "rollout_id": "traj-1",
            "problem_id": "p-1",
            "role": "assistant",
            "content": "the answer is 42",
            "reward": 1.0,
            "policy_version": "ckpt-7",
        }
    )
    assert resp == {"version": store.version(), "ids": ["row-0"], "count": 1}
    # Durable on return, visible after the flush.
    assert store.list() == []
    assert store.get("row-0") is None
    store.flush()
    rows = store.list()
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == "row-0"
    assert row["rollout_id"] == "traj-1"
    assert row["problem_id"] == "p-1"
    assert row["reward"] == 1.0
    assert row["policy_version"] == "ckpt-7"
    assert store.get("row-0") == row
    assert store.get("missing") is None


def test_read_dicts_have_every_column_but_the_blob_with_defaults(store_uri):
    store = RolloutStore.open(store_uri)
    before = datetime.datetime.now(datetime.timezone.utc)
    store.add({"id": "a", "rollout_id": "traj"})
    store.flush()
    row = store.get("a")
    assert list(row) == [
        "id", "rollout_id", "problem_id", "dataset", "sequence_order", "role", "created_at",
        "content", "content_type", "model_input_string", "model_output_string", "rationale",
        "problem_text", "user_metadata", "input_tokens", "output_tokens", "num_input_tokens",
        "num_output_tokens", "output_logprobs", "input_logprobs", "ref_logprobs", "loss_mask",
        "advantage", "reward", "raw_reward", "grader_id", "score", "include_in_training",
        "exclude_reason", "policy_version", "relationships", "payload_size",
        "payload_checksum", "artifact_type", "metadata",
    ]
    # The HTTP API's defaults: problem_id from rollout_id, order 0, assistant, text/plain.
    assert row["problem_id"] == "traj"
    assert row["sequence_order"] == 0
    assert row["role"] == "assistant"
    assert row["content_type"] == "text/plain"
    assert row["relationships"] == []
    created = datetime.datetime.fromisoformat(row["created_at"].replace("Z", "+00:00"))
    assert before - datetime.timedelta(seconds=1) <= created
    assert created <= datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)


def test_every_field_round_trips(store_uri):
    store = RolloutStore.open(store_uri)
    record = {
        "id": "it's-ü",
        "rollout_id": "traj",
        "problem_id": "p",
        "dataset": "gsm8k",
        "sequence_order": 3,
        "role": "tool",
        "created_at": "2024-05-01T12:34:56.5+02:00",
        "content": "x" * 1000,
        "content_type": "application/json",
        "model_input_string": "in",
        "model_output_string": "out",
        "rationale": "because",
        "problem_text": "2+2?",
        "user_metadata": "free text",
        "input_tokens": [1, 2, 3],
        "output_tokens": [-4, 2**31 - 1],
        "num_input_tokens": 3,
        "num_output_tokens": 2,
        "output_logprobs": [0.1, -0.25],
        "input_logprobs": [],
        "ref_logprobs": [-1.5],
        "loss_mask": [0, 1, -128, 127],
        "advantage": -0.5,
        "reward": 0.1,
        "raw_reward": 3.0,
        "grader_id": "g",
        "score": 0.75,
        "include_in_training": False,
        "exclude_reason": "dup",
        "policy_version": "v3",
        "relationships": [
            {"target_id": "t1", "relation": "follows", "weight": 0.5},
            {"target_id": "t2", "relation": "cites"},
        ],
        "payload_size": 5,
        "payload_checksum": "abc",
        "artifact_type": "screenshot",
        "metadata": {"b": [1, 2.5, None, True], "a": {"nested": "ü"}},
    }
    store.add(record)
    store.flush()
    row = store.get("it's-ü")
    expected = dict(record)
    expected["created_at"] = "2024-05-01T10:34:56.500000Z"
    expected["relationships"] = [
        {"target_id": "t1", "relation": "follows", "weight": 0.5},
        {"target_id": "t2", "relation": "cites", "weight": None},
    ]
    assert row == expected
    # float32 values come back as the shortest decimal of the float32, as the HTTP API
    # writes them: 0.1, not 0.10000000149011612.
    assert repr(row["reward"]) == "0.1"
    assert [repr(v) for v in row["output_logprobs"]] == ["0.1", "-0.25"]


def test_json_values_of_metadata_and_user_metadata(store_uri):
    store = RolloutStore.open(store_uri)
    store.add(
        [
            {"id": "s", "rollout_id": "r", "metadata": "plain", "user_metadata": {"k": 1}},
            {"id": "n", "rollout_id": "r", "metadata": 42, "user_metadata": [1, "x"]},
        ]
    )
    store.flush()
    # metadata holds any JSON value; user_metadata is text, other values stored as JSON text.
    assert store.get("s")["metadata"] == "plain"
    assert store.get("s")["user_metadata"] == '{"k":1}'
    assert store.get("n")["metadata"] == 42
    assert store.get("n")["user_metadata"] == '[1,"x"]'


def test_add_many_and_add_one(any_uri):
    store = RolloutStore.open(any_uri)
    store.add([{"id": f"row-{i}", "rollout_id": "traj-1", "reward": float(i)} for i in range(3)])
    store.add_one(id="row-3", rollout_id="traj-1", reward=3.0)
    # Any iterable of mappings works, a generator too.
    store.add({"id": f"gen-{i}", "rollout_id": "traj-2"} for i in range(2))
    store.flush()
    assert {r["id"] for r in store.list()} == {"row-0", "row-1", "row-2", "row-3", "gen-0", "gen-1"}


def test_id_autogenerated_when_omitted(any_uri):
    store = RolloutStore.open(any_uri)
    resp = store.add({"rollout_id": "traj-1", "reward": 1.0})
    assert resp["count"] == 1
    (generated,) = resp["ids"]
    assert uuid.UUID(generated).version == 4
    assert str(uuid.UUID(generated)) == generated
    r2 = store.add_one(rollout_id="traj-1", id=None)  # None is the same as absent
    assert r2["ids"][0] != generated
    store.flush()
    assert store.get(generated)["id"] == generated
    assert store.get(r2["ids"][0]) is not None


def test_binary_payload_roundtrip(any_uri):
    store = RolloutStore.open(any_uri)
    blob = b"\x00\x01\x02trace-bytes"
    store.add(
        {
            "id": "art-0",
            "rollout_id": "traj-1",
            "role": "artifact",
            "content_type": "image/png",
            "artifact_type": "excel_grade_screenshot",
            "binary_payload": blob,
            "payload_size": len(blob),
        }
    )
    # A bytearray, a memoryview and a base64 string (the HTTP API's form) work too.
    store.add_one(id="art-1", rollout_id="traj-1", binary_payload=bytearray(b"ba"))
    store.add_one(id="art-2", rollout_id="traj-1", binary_payload=memoryview(b"mv"))
    store.add_one(id="art-3", rollout_id="traj-1", binary_payload="AAEC")
    store.flush()
    row = store.get("art-0")
    assert "binary_payload" not in row
    assert row["payload_size"] == len(blob)
    assert row["content_type"] == "image/png"
    assert row["artifact_type"] == "excel_grade_screenshot"
    assert all("binary_payload" not in r for r in store.list())
    assert store.get_blob("art-0") == blob
    assert store.get_blob("art-1") == b"ba"
    assert store.get_blob("art-2") == b"mv"
    assert store.get_blob("art-3") == b"\x00\x01\x02"
    assert store.get_blob("missing") is None
    big = os.urandom(3 << 20)
    store.add_one(id="big", rollout_id="traj-1", binary_payload=big)
    store.flush()
    assert store.get_blob("big") == big


def test_numpy_arrays_and_scalars_are_taken(store_uri):
    store = RolloutStore.open(store_uri)
    logprobs = np.array([0.5, -1.25, -3.0], dtype=np.float32)
    store.add(
        {
            "id": "np",
            "rollout_id": "traj",
            "output_logprobs": logprobs,
            "input_logprobs": np.array([0.5, 2.0]),  # float64, converted
            "ref_logprobs": logprobs[::2],  # not contiguous
            "input_tokens": np.arange(4, dtype=np.int64),
            "output_tokens": np.array([7, 8], dtype=np.int32),
            "loss_mask": np.array([1, 0, 1], dtype=np.uint8),
            "reward": np.float32(0.5),
            "sequence_order": np.int64(2),
            "include_in_training": np.bool_(True),
        }
    )
    store.flush()
    row = store.get("np")
    assert row["output_logprobs"] == [0.5, -1.25, -3.0]
    assert row["input_logprobs"] == [0.5, 2.0]
    assert row["ref_logprobs"] == [0.5, -3.0]
    assert row["input_tokens"] == [0, 1, 2, 3]
    assert row["output_tokens"] == [7, 8]
    assert row["loss_mask"] == [1, 0, 1]
    assert row["reward"] == 0.5
    assert row["sequence_order"] == 2
    assert row["include_in_training"] is True


def test_created_at_forms(store_uri):
    store = RolloutStore.open(store_uri)
    aware = datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    store.add(
        [
            {"id": "dt", "rollout_id": "r", "created_at": aware},
            {"id": "us", "rollout_id": "r", "created_at": 1_700_000_000_000_001},
            {"id": "txt", "rollout_id": "r", "created_at": "2024-05-01T00:00:00Z"},
        ]
    )
    store.flush()
    assert store.get("dt")["created_at"] == "2024-01-02T03:04:05.678901Z"
    assert store.get("us")["created_at"] == "2023-11-14T22:13:20.000001Z"
    assert store.get("txt")["created_at"] == "2024-05-01T00:00:00.000000Z"
    naive = r"records\[0\]\.created_at must include timezone"
    with pytest.raises(InvalidRequestError, match=naive):
        store.add({"id": "naive", "rollout_id": "r", "created_at": datetime.datetime(2024, 1, 1)})


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "a"}, r"^records\[0\]\.rollout_id is required$"),
        ({"id": "a", "rollout_id": ""}, r"^records\[0\]\.rollout_id is required$"),
        ({"id": "", "rollout_id": "r"}, r"^records\[0\]\.id is required$"),
        ({"rollout_id": "r", "reward": "abc"},
         r'^records\[0\]\.reward: expected a number, found string "abc"$'),
        ({"rollout_id": "r", "reward": True},
         r"^records\[0\]\.reward: expected a number, found boolean true$"),
        ({"rollout_id": "r", "reward": 1e39},
         r"^records\[0\]\.reward: 1e\+39 is out of range for a 32-bit float$"),
        ({"rollout_id": "r", "sequence_order": 1.5},
         r"^records\[0\]\.sequence_order: expected a 32-bit integer, found number 1.5$"),
        ({"rollout_id": "r", "sequence_order": 2**31},
         r"^records\[0\]\.sequence_order: 2147483648 is out of range for a 32-bit integer$"),
        ({"rollout_id": "r", "dataset": 5},
         r"^records\[0\]\.dataset: expected a string, found number 5$"),
        ({"rollout_id": "r", "include_in_training": "yes"},
         r'^records\[0\]\.include_in_training: expected a boolean, found string "yes"$'),
        ({"rollout_id": "r", "input_tokens": [1, "2"]},
         r'^records\[0\]\.input_tokens\[1\]: expected a 32-bit integer, found string "2"$'),
        ({"rollout_id": "r", "loss_mask": [300]},
         r"^records\[0\]\.loss_mask\[0\]: 300 is out of range for an 8-bit integer$"),
        ({"rollout_id": "r", "output_logprobs": np.zeros((2, 2), dtype=np.float32)},
         r"^records\[0\]\.output_logprobs: expected a 1-D array, found an array of 2 dimensions$"),
        ({"rollout_id": "r", "output_logprobs": "0.5"},
         r'^records\[0\]\.output_logprobs: expected an array of numbers, found string "0.5"$'),
        ({"rollout_id": "r", "binary_payload": "not base64!"},
         r"^records\[0\]\.binary_payload: "),
        ({"rollout_id": "r", "created_at": "yesterday"}, r"^records\[0\]\.created_at: "),
        ({"rollout_id": "r", "relationships": [{"relation": "x"}]},
         r"^records\[0\]\.relationships\[0\]\.target_id is required$"),
        ({"rollout_id": "r", "metadata": {"k": {1, 2}}},
         r"^records\[0\]\.metadata\.k: expected a JSON value, found set$"),
        ({"rollout_id": "r", "metadata": float("nan")},
         r"^records\[0\]\.metadata: nan is not a JSON number$"),
    ],
)
def test_bad_values_are_refused_naming_the_field(store_uri, record, message):
    store = RolloutStore.open(store_uri)
    with pytest.raises(InvalidRequestError, match=message) as raised:
        store.add(dict(record))
    assert raised.value.status == "InvalidArgument"
    # Nothing written, also when the bad record follows good ones.
    with pytest.raises(InvalidRequestError):
        store.add([{"id": "good", "rollout_id": "r"}, dict(record)])
    store.flush()
    assert store.list() == []


def test_unknown_keys_and_none_values_are_ignored(store_uri):
    # As the HTTP API reads its JSON bodies (and lance-context's serde DTOs).
    store = RolloutStore.open(store_uri)
    store.add({"id": "a", "rollout_id": "r", "not_a_column": object(), "reward": None})
    store.flush()
    assert store.get("a")["reward"] is None


def test_non_mapping_records_are_type_errors(store_uri):
    store = RolloutStore.open(store_uri)
    with pytest.raises(TypeError, match=r"records\[1\] must be a mapping, found list"):
        store.add([{"rollout_id": "r"}, ["not", "a", "mapping"]])
    with pytest.raises(TypeError, match="found int"):
        store.add(42)
    with pytest.raises(TypeError, match="found str"):
        store.add("rollout")


def test_empty_add_rejected(store_uri):
    store = RolloutStore.open(store_uri)
    with pytest.raises(ValueError, match="^records array must not be empty$"):
        store.add([])
    with pytest.raises(InvalidRequestError):
        store.add(iter([]))


def test_reopen_sees_prior_rows(any_uri):
    store = RolloutStore.open(any_uri)
    store.add({"id": "row-0", "rollout_id": "traj-1"})
    store.flush()
    store.close()
    reopened = RolloutStore.open(any_uri)
    assert [r["id"] for r in reopened.list()] == ["row-0"]


def test_list_filters_before_pagination(any_uri):
    store = RolloutStore.open(any_uri)
    store.add(
        [
            {"id": "row-a", "rollout_id": "traj-a", "problem_id": "problem-a",
             "policy_version": "ckpt-1", "role": "assistant", "include_in_training": True},
            {"id": "row-b", "rollout_id": "traj-b", "problem_id": "problem-b",
             "policy_version": "ckpt-2", "role": "assistant", "include_in_training": False},
            {"id": "row-c", "rollout_id": "traj-b", "problem_id": "problem-b",
             "policy_version": "ckpt-2", "role": "artifact", "artifact_type": "screenshot",
             "include_in_training": False},
        ]
    )
    store.flush()
    rows = store.list(filters={"policy_version": "ckpt-2", "include_in_training": False})
    assert {row["id"] for row in rows} == {"row-b", "row-c"}
    page = store.list(limit=1, offset=1, filters={"policy_version": "ckpt-2",
                                                  "include_in_training": False})
    assert [r["id"] for r in page] == ["row-c"]
    assert [r["id"] for r in store.list(filters={"role": "artifact"})] == ["row-c"]
    assert [r["id"] for r in store.list(filters={"artifact_type": "screenshot"})] == ["row-c"]
    assert [r["id"] for r in store.list(filters={"problem_id": "problem-a"})] == ["row-a"]
    # An empty string is no filter.
    assert len(store.list(filters={"rollout_id": ""})) == 3
    assert [r["id"] for r in store.list(limit=2)] == ["row-a", "row-b"]
    assert [r["id"] for r in store.list(offset=2)] == ["row-c"]
    assert store.list(limit=0) == []


def test_list_filter_values_with_quotes_and_unicode(store_uri):
    store = RolloutStore.open(store_uri)
    store.add([
        {"id": "q", "rollout_id": "r", "policy_version": "worker's-ckpt"},
        {"id": "u", "rollout_id": "r", "policy_version": "版本-ü"},
    ])
    store.flush()
    assert [r["id"] for r in store.list(filters={"policy_version": "worker's-ckpt"})] == ["q"]
    assert [r["id"] for r in store.list(filters={"policy_version": "版本-ü"})] == ["u"]


@pytest.mark.parametrize(
    "filters, message",
    [
        ({"reward": 1.0}, "unsupported rollout filter 'reward'"),
        ({"id": "x"}, "unsupported rollout filter 'id'"),
        ({"dataset": 42}, "rollout filter 'dataset' must be a string"),
        ({"include_in_training": "yes"}, "include_in_training"),
        (["role"], "rollout filters must be a JSON object"),
    ],
)
def test_list_rejects_invalid_filters(store_uri, filters, message):
    store = RolloutStore.open(store_uri)
    # A RuntimeError, as lance-context raises it, and a ValueError.
    with pytest.raises(RuntimeError, match=message) as raised:
        store.list(filters=filters)
    assert isinstance(raised.value, InvalidRequestError)
    assert str(raised.value).startswith("invalid rollout filters: ")


def test_list_rejects_negative_counts(store_uri):
    store = RolloutStore.open(store_uri)
    with pytest.raises(InvalidRequestError, match="^limit: expected a non-negative integer"):
        store.list(limit=-1)
    with pytest.raises(InvalidRequestError, match="^offset: expected a non-negative integer"):
        store.list(offset=-5)


def test_get_trajectory_orders_rows(any_uri):
    store = RolloutStore.open(any_uri)
    store.add(
        [
            {"id": "row-a", "rollout_id": "target", "sequence_order": 2},
            {"id": "other", "rollout_id": "other", "sequence_order": 0},
            {"id": "row-b", "rollout_id": "target", "sequence_order": 0},
            {"id": "row-0", "rollout_id": "target", "sequence_order": 2},
        ]
    )
    store.flush()
    # sequence_order, then id.
    assert [r["id"] for r in store.get_trajectory("target")] == ["row-b", "row-0", "row-a"]
    assert store.get_trajectory("nobody") == []
    with pytest.raises(InvalidRequestError, match="rollout_id must not be empty"):
        store.get_trajectory("")
    with pytest.raises(TypeError, match="rollout_id must be a str, found int"):
        store.get_trajectory(5)


def test_appends_are_immutable_and_the_newest_row_wins(store_uri):
    store = RolloutStore.open(store_uri)
    store.add({"id": "a", "rollout_id": "r", "reward": 1.0})
    store.flush()
    store.add({"id": "a", "rollout_id": "r", "reward": 2.0})
    store.flush()
    assert [r["reward"] for r in store.list()] == [2.0]


def test_checkout_pins_reads_and_refuses_writes(store_uri):
    store = RolloutStore.open(store_uri)
    store.add({"id": "a", "rollout_id": "r"})
    store.flush()
    version = store.version()
    store.checkout(version)
    assert store.version() == version
    # A pinned handle reads the base version only (pending generations are not part of it).
    assert store.list() == []
    with pytest.raises(InvalidRequestError):
        store.add({"id": "b", "rollout_id": "r"})
    store.refresh_latest()
    store.add({"id": "b", "rollout_id": "r"})
    store.flush()
    assert [r["id"] for r in store.list()] == ["a", "b"]
    with pytest.raises(NotFoundError):
        store.checkout(version + 1000)
    with pytest.raises(InvalidRequestError, match="version must not be negative"):
        store.checkout(-1)


def test_memory_stores_are_shared_by_name_and_isolated_between_names(memory_uri):
    a = RolloutStore.open(memory_uri)
    a.add({"id": "x", "rollout_id": "r"})
    a.flush()
    same = RolloutStore.open(memory_uri)
    assert [r["id"] for r in same.list()] == ["x"]
    other = RolloutStore.open(memory_uri + "-other")
    assert other.list() == []
    # Nothing touches the file system.
    assert not os.path.exists(memory_uri)


def test_file_uris_and_path_objects(tmp_path):
    path = tmp_path / "with space"
    store = RolloutStore.open(path.as_uri())  # file:///.../with%20space
    store.add({"id": "a", "rollout_id": "r"})
    store.close()
    assert any(path.iterdir())
    assert [r["id"] for r in RolloutStore.open(pathlib.Path(path)).list()] == ["a"]
    assert [r["id"] for r in RolloutStore.open("file://localhost" + str(path)).list()] == ["a"]


@pytest.mark.parametrize(
    "uri, message",
    [
        ("s3://bucket/x", "unsupported store URI scheme 's3'"),
        ("memory://", "names no store"),
        ("file://host/x", "is not a local file URI"),
        ("file:///tmp/bad%zz", "invalid percent-escape"),
        ("", "store URI must not be empty"),
    ],
)
def test_bad_uris(uri, message):
    with pytest.raises(InvalidRequestError, match=message):
        RolloutStore.open(uri)


def test_storage_options(tmp_path, memory_uri):
    fast = RolloutStore.open(str(tmp_path / "a"), storage_options={"sync": False})
    fast.add({"id": "a", "rollout_id": "r"})
    fast.flush()
    assert len(fast.list()) == 1
    RolloutStore.open(str(tmp_path / "b"), storage_options={"sync": "true", "unused": None})
    with pytest.raises(InvalidRequestError, match="unsupported storage option 'aws_region'"):
        RolloutStore.open(str(tmp_path / "c"), storage_options={"aws_region": "x"})
    with pytest.raises(InvalidRequestError, match="must be true or false"):
        RolloutStore.open(str(tmp_path / "d"), storage_options={"sync": "maybe"})
    with pytest.raises(InvalidRequestError, match="memory:// stores take no storage options"):
        RolloutStore.open(memory_uri, storage_options={"sync": False})
    # Nothing was created for the refused opens.
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_a_location_holding_something_else_is_refused(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(InvalidRequestError, match="holds other files but no store"):
        RolloutStore.open(str(occupied))
    assert os.listdir(occupied) == ["notes.txt"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(InvalidRequestError, match="is not a directory"):
        RolloutStore.open(str(a_file))


def test_close_is_deterministic_and_idempotent(store_uri):
    with RolloutStore.open(store_uri) as store:
        store.add({"id": "a", "rollout_id": "r"})
        assert not store.closed
    # Leaving the block closed the store, which sealed the row.
    assert store.closed
    assert "closed" in repr(store)
    store.close()
    for call in (store.list, store.flush, store.version, lambda: store.get("a"),
                 lambda: store.add({"rollout_id": "r"})):
        with pytest.raises(InvalidRequestError, match=r"rollout store '.*' is closed"):
            call()
    assert [r["id"] for r in RolloutStore.open(store_uri).list()] == ["a"]


def test_a_dropped_store_seals_its_rows(any_uri):
    store = RolloutStore.open(any_uri)
    store.add({"id": "a", "rollout_id": "r"})
    del store
    gc.collect()
    # Sealed by the C++ destructor when Python dropped the handle: visible at once.
    assert [r["id"] for r in RolloutStore.open(any_uri).list()] == ["a"]


def test_two_handles_see_each_others_flushed_rows(any_uri):
    writer = RolloutStore.open(any_uri)
    reader = RolloutStore.open(any_uri)
    writer.add({"id": "a", "rollout_id": "r"})
    writer.flush()
    assert reader.get("a")["id"] == "a"
    assert [r["id"] for r in reader.list()] == ["a"]


def test_non_finite_floats_come_back_as_floats(store_uri):
    store = RolloutStore.open(store_uri)
    store.add({"id": "a", "rollout_id": "r", "reward": float("nan"), "score": "-Infinity",
               "advantage": float("inf")})
    store.flush()
    row = store.get("a")
    assert math.isnan(row["reward"])
    assert row["score"] == float("-inf")
    assert row["advantage"] == float("inf")
