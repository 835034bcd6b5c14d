"""RolloutStore behaviour (lance-context §5.3) through the `rollout_store` fixture, plus what
only the remote twin has: connect / connect_or_create, errors from the server, threads
sharing one handle, and AsyncRolloutStore."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import threading

import pytest

from strata.aio import AsyncRolloutStore
from strata.errors import ContextStoreError, InvalidRequestError, NotFoundError
from strata.remote import RemoteClient, RemoteRolloutStore


def row(id, rollout_id="traj-1", **fields):  # noqa: A002
    return {"id": id, "rollout_id": rollout_id, **fields}


def test_add_returns_ids_and_rows_round_trip(rollout_store):
    result = rollout_store.add([
        row("r0", problem_id="p-1", content="the answer is 42", reward=1.0,
            policy_version="ckpt-7", metadata={"b": 1, "a": [1, 2]}),
        row("r1", role="artifact", content_type="application/octet-stream",
            binary_payload=b"\x00\x01\x02trace", payload_size=8),
    ])
    assert result["count"] == 2
    assert result["ids"] == ["r0", "r1"]
    assert isinstance(result["version"], int)
    rollout_store.flush()

    got = rollout_store.get("r0")
    assert got["rollout_id"] == "traj-1"
    assert got["problem_id"] == "p-1"
    assert got["content"] == "the answer is 42"
    assert got["reward"] == 1.0
    assert got["role"] == "assistant"  # the default
    assert got["content_type"] == "text/plain"
    assert got["sequence_order"] == 0
    assert got["metadata"] == {"a": [1, 2], "b": 1}
    assert isinstance(got["created_at"], str) and got["created_at"].endswith("Z")
    assert "binary_payload" not in got  # reads leave the blob to get_blob
    assert rollout_store.get("r1")["payload_size"] == 8
    assert {r["id"] for r in rollout_store.list()} == {"r0", "r1"}


def test_problem_id_defaults_to_rollout_id_and_ids_are_generated(rollout_store):
    result = rollout_store.add({"rollout_id": "traj-9", "content": "no id"})
    rollout_store.flush()
    [generated] = result["ids"]
    assert len(generated) == 36 and generated[14] == "4"  # a UUID, version 4
    got = rollout_store.get(generated)
    assert got["problem_id"] == "traj-9"
    assert got["content"] == "no id"


def test_add_one_takes_keyword_fields(rollout_store):
    result = rollout_store.add_one(id="only", rollout_id="traj-9", reward=0.5)
    rollout_store.flush()
    assert result["ids"] == ["only"]
    assert rollout_store.get("only")["reward"] == 0.5


def test_list_columns_take_lists_and_numpy_arrays(rollout_store):
    np = pytest.importorskip("numpy")
    rollout_store.add(row(
        "r0", input_tokens=[1, 2, 3], output_tokens=np.array([4, 5], dtype=np.int32),
        output_logprobs=np.array([-0.5, -0.25], dtype=np.float32), loss_mask=[1, 0, 1],
        relationships=[{"target_id": "r9", "relation": "follows", "weight": 0.5}]))
    rollout_store.flush()
    got = rollout_store.get("r0")
    assert got["input_tokens"] == [1, 2, 3]
    assert got["output_tokens"] == [4, 5]
    assert got["output_logprobs"] == [-0.5, -0.25]
    assert got["loss_mask"] == [1, 0, 1]
    assert got["relationships"] == [{"target_id": "r9", "relation": "follows", "weight": 0.5}]


def test_non_finite_floats_travel_as_text(rollout_store):
    rollout_store.add(row("r0", reward=float("nan"), advantage=float("-inf"),
                          output_logprobs=[float("inf"), -1.0]))
    rollout_store.flush()
    got = rollout_store.get("r0")
    assert math.isnan(float(got["reward"]))
    assert float(got["advantage"]) == -math.inf
    assert [float(v) for v in got["output_logprobs"]] == [math.inf, -1.0]


def test_created_at_takes_aware_datetimes_only(rollout_store):
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=dt.timezone.utc)
    rollout_store.add(row("r0", created_at=when))
    rollout_store.flush()
    assert rollout_store.get("r0")["created_at"] == "2026-01-02T03:04:05.600000Z"
    with pytest.raises(InvalidRequestError, match="created_at must include timezone"):
        rollout_store.add(row("r1", created_at=dt.datetime(2026, 1, 2)))


def test_list_filters_paging_and_refused_keys(rollout_store):
    rollout_store.add([
        row("a0", "traj-a", role="assistant", policy_version="v1", include_in_training=True),
        row("a1", "traj-a", role="tool", policy_version="v2", include_in_training=False),
        row("b0", "traj-b", role="assistant", policy_version="v1", dataset="gsm8k",
            artifact_type="trace", content_type="application/json"),
    ])
    rollout_store.flush()

    def ids(**filters):
        return sorted(r["id"] for r in rollout_store.list(filters=filters))

    assert ids(rollout_id="traj-a") == ["a0", "a1"]
    assert ids(problem_id="traj-b") == ["b0"]
    assert ids(role="assistant") == ["a0", "b0"]
    assert ids(policy_version="v1", role="assistant") == ["a0", "b0"]
    assert ids(include_in_training=False) == ["a1"]
    assert ids(dataset="gsm8k") == ["b0"]
    assert ids(artifact_type="trace") == ["b0"]
    assert ids(content_type="application/json") == ["b0"]
    assert ids(rollout_id="") == ["a0", "a1", "b0"]  # "" is no filter
    assert ids(rollout_id="none") == []

    everything = [r["id"] for r in rollout_store.list()]
    assert sorted(everything) == ["a0", "a1", "b0"]
    assert [r["id"] for r in rollout_store.list(limit=2)] == everything[:2]
    assert [r["id"] for r in rollout_store.list(limit=2, offset=2)] == everything[2:]
    assert rollout_store.list(offset=5) == []

    with pytest.raises(InvalidRequestError, match="unsupported rollout filter 'reward'"):
        rollout_store.list(filters={"reward": 1.0})
    with pytest.raises(InvalidRequestError, match="include_in_training"):
        rollout_store.list(filters={"include_in_training": "yes"})


def test_get_trajectory_orders_by_sequence_order_then_id(rollout_store):
    rollout_store.add([
        row("t-c", "traj-1", sequence_order=2),
        row("t-b", "traj-1", sequence_order=1),
        row("t-a", "traj-1", sequence_order=2),
        row("t-z", "traj-1", sequence_order=0),
        row("other", "traj-2", sequence_order=0),
    ])
    rollout_store.flush()
    assert [r["id"] for r in rollout_store.get_trajectory("traj-1")] == [
        "t-z", "t-b", "t-a", "t-c"]
    assert rollout_store.get_trajectory("traj-3") == []
    with pytest.raises(InvalidRequestError, match="rollout_id must not be empty"):
        rollout_store.get_trajectory("")


def test_blobs_round_trip_and_missing_ones_are_none(rollout_store):
    big = bytes(i % 251 for i in range(3 * 1024 * 1024 + 17))
    rollout_store.add([row("small", binary_payload=b"\x00\xffpayload"),
                       row("big", binary_payload=big), row("none")])
    rollout_store.flush()
    assert rollout_store.get_blob("small") == b"\x00\xffpayload"
    assert rollout_store.get_blob("big") == big
    assert rollout_store.get_blob("none") is None
    assert rollout_store.get_blob("missing") is None
    assert rollout_store.get("missing") is None


def test_ids_with_any_characters(rollout_store):
    odd = ["it's", "a/b", "sp ace", "q?x=1&y", "pct%2F", "ünï"]
    rollout_store.add([row(i, binary_payload=i.encode()) for i in odd])
    rollout_store.flush()
    for i in odd:
        assert rollout_store.get(i)["id"] == i
        assert rollout_store.get_blob(i) == i.encode()


def test_newest_write_of_an_id_wins(rollout_store):
    rollout_store.add(row("r0", content="first"))
    rollout_store.add(row("r0", content="second"))
    rollout_store.flush()
    assert rollout_store.get("r0")["content"] == "second"
    assert [r["content"] for r in rollout_store.list()] == ["second"]


def test_bad_input_is_refused_naming_the_field_and_writes_nothing(rollout_store):
    with pytest.raises(InvalidRequestError) as raised:
        rollout_store.add([row("ok"), row("bad", reward="high")])
    assert "records[1].reward" in str(raised.value)
    assert raised.value.code == "INVALID_REQUEST"
    with pytest.raises(InvalidRequestError, match="rollout_id is required"):
        rollout_store.add({"id": "x"})
    with pytest.raises(InvalidRequestError, match="must not be empty"):
        rollout_store.add([])
    with pytest.raises(TypeError):
        rollout_store.add("not a record")
    rollout_store.flush()
    assert rollout_store.list() == []


def test_version_and_checkout(base_url, store_name):
    # checkout pins the server's handle for every client: a store of its own.
    store = RemoteRolloutStore.connect_or_create(base_url, store_name)
    store.add(row("r0"))
    version = store.version()
    assert isinstance(version, int) and version >= 1
    store.checkout(version)
    assert store.version() == version
    with pytest.raises(InvalidRequestError, match="read-only"):
        store.add(row("r1"))
    with pytest.raises(NotFoundError):
        store.checkout(version + 100)
    with pytest.raises(InvalidRequestError, match="unpins"):
        store.refresh_latest()


def test_connect_finds_existing_stores_only(base_url, store_name):
    with pytest.raises(NotFoundError, match=f"Rollout store '{store_name}' does not exist"):
        RemoteRolloutStore.connect(base_url, store_name)
    created = RemoteRolloutStore.connect_or_create(base_url, store_name)
    created.add(row("r0", content="from the creator"))
    again = RemoteRolloutStore.connect_or_create(base_url, store_name)
    reader = RemoteRolloutStore.connect(base_url, store_name)
    # Every add is sealed before it returns: another handle reads it with no flush.
    assert [r["id"] for r in reader.list()] == ["r0"]
    assert again.uri == created.uri == reader.uri
    for s in (created, again, reader):
        s.close()
    with pytest.raises(InvalidRequestError, match="closed"):
        reader.list()


def test_invalid_store_names_are_refused(base_url):
    with pytest.raises(InvalidRequestError):
        RemoteRolloutStore.connect_or_create(base_url, "../escape")
    with pytest.raises(InvalidRequestError):
        RemoteRolloutStore.connect_or_create(base_url, "_registry")


def test_errors_are_store_errors_never_bare_runtime_errors(base_url):
    store = RemoteRolloutStore(RemoteClient(base_url), "missing-store", {})
    for call in (store.list, store.version, lambda: store.get("x"), lambda: store.add(row("x")),
                 lambda: store.get_blob("x")):
        with pytest.raises(NotFoundError) as raised:
            call()
        assert isinstance(raised.value, ContextStoreError)
        assert isinstance(raised.value, RuntimeError)
        assert str(raised.value) == "Rollout store 'missing-store' does not exist"
        assert raised.value.http_status == 404


def test_eight_threads_share_one_handle_and_lose_nothing(rollout_store):
    per_thread, batch = 12, 8
    errors = []
    start = threading.Barrier(8)

    def writer(t):
        try:
            start.wait()
            for b in range(per_thread):
                rollout_store.add([row(f"t{t}-b{b}-{i}", f"traj-{t}", sequence_order=b * batch + i)
                                   for i in range(batch)])
                if b % 4 == 0:
                    rollout_store.get(f"t{t}-b{b}-0")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rollout_store.flush()
    rows = rollout_store.list()
    assert len(rows) == 8 * per_thread * batch
    assert len({r["id"] for r in rows}) == len(rows)
    for t in range(8):
        trajectory = rollout_store.get_trajectory(f"traj-{t}")
        assert [r["sequence_order"] for r in trajectory] == list(range(per_thread * batch))


# --- AsyncRolloutStore ---------------------------------------------------------------------


def test_async_store_round_trip(base_url, store_name):
    async def run():
        store = await AsyncRolloutStore.connect_or_create(base_url, store_name)
        result = await store.add([row("r0", content="hi", reward=1.0),
                                  row("r1", binary_payload=b"blob", sequence_order=1)])
        assert result["count"] == 2
        await store.add_one(id="r2", rollout_id="traj-2")
        await store.flush()
        assert {r["id"] for r in await store.list()} == {"r0", "r1", "r2"}
        assert [r["id"] for r in await store.list(filters={"rollout_id": "traj-1"})] == [
            "r0", "r1"]
        assert [r["id"] for r in await store.get_trajectory("traj-1")] == ["r0", "r1"]
        assert (await store.get("r0"))["reward"] == 1.0
        assert await store.get("missing") is None
        assert await store.get_blob("r1") == b"blob"
        assert isinstance(store.version(), int)
        reader = await AsyncRolloutStore.connect(base_url, store_name)
        assert len(await reader.list()) == 3
        # Concurrent calls run on the executor's threads, not one after another.
        results = await asyncio.gather(*(store.get(f"r{i % 3}") for i in range(12)))
        assert [r["id"] for r in results] == [f"r{i % 3}" for i in range(12)]
        with pytest.raises(NotFoundError):
            await AsyncRolloutStore.connect(base_url, store_name + "-missing")
        await store.aclose()
        await reader.aclose()

    asyncio.run(run())


def test_async_store_checkout(base_url, store_name):
    async def run():
        async with await AsyncRolloutStore.connect_or_create(base_url, store_name) as store:
            await store.add(row("r0"))
            await store.checkout(store.version())
            with pytest.raises(InvalidRequestError):
                await store.add(row("r1"))

    asyncio.run(run())


class _RecordingStore:
    """An object with RolloutStore's sync methods (as an embedded store has), recording the
    thread each call ran on."""

    def __init__(self):
        self.calls = []

    def _record(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs, threading.get_ident()))
        return name

    def __getattr__(self, name):
        return lambda *args, **kwargs: self._record(name, *args, **kwargs)


def test_async_store_wraps_any_store_and_runs_calls_off_the_loop():
    inner = _RecordingStore()

    async def run():
        store = AsyncRolloutStore(inner)
        loop_thread = threading.get_ident()
        assert await store.add([{"rollout_id": "t"}]) == "add"
        assert await store.add_one(rollout_id="t") == "add_one"
        assert await store.flush() == "flush"
        assert await store.list(5, 1, {"role": "tool"}) == "list"
        assert await store.get_trajectory("t") == "get_trajectory"
        assert await store.get("x") == "get"
        assert await store.get_blob("x") == "get_blob"
        assert await store.checkout(3) == "checkout"
        assert store.version() == "version"  # synchronous
        return loop_thread

    loop_thread = asyncio.run(run())
    names = [c[0] for c in inner.calls]
    assert names == ["add", "add_one", "flush", "list", "get_trajectory", "get", "get_blob",
                     "checkout", "version"]
    assert inner.calls[3][1] == (5, 1, {"role": "tool"})
    assert inner.calls[1][2] == {"rollout_id": "t"}
    assert all(c[3] != loop_thread for c in inner.calls[:-1])
    assert inner.calls[-1][3] == loop_thread


def test_async_store_opens_an_embedded_store(tmp_path):
    import strata

    if getattr(strata, "RolloutStore", None) is None:
        pytest.skip("strata.RolloutStore (embedded) is not available")

    async def run():
        async with await AsyncRolloutStore.open(str(tmp_path / "r")) as store:
            await store.add([row("r1", sequence_order=1), row("r0")])
            await store.flush()
            assert [r["id"] for r in await store.get_trajectory("traj-1")] == ["r0", "r1"]

    asyncio.run(run())
