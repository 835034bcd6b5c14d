"""Context behaviour (lance-context §5.1, §5.2) through the `context` fixture (a
SyncRemoteContext today), plus RemoteContext and AsyncContext under asyncio."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading

import pytest

from strata.aio import AsyncContext
from strata.errors import ContextStoreError, InvalidRequestError, NotFoundError
from strata.remote import RemoteContext, SyncRemoteContext

RECORD_KEYS = {
    "id", "external_id", "run_id", "bot_id", "session_id", "tenant", "source", "role",
    "content_type", "text", "binary", "payload_uri", "payload_size", "payload_checksum",
    "embedding", "created_at", "state_metadata", "metadata", "relationships", "expires_at",
    "retention_policy", "lifecycle_status", "retired_at", "retired_reason", "supersedes_id",
    "superseded_by_id",
}


def test_add_and_get_round_trip(context):
    result = context.add(role="user", content="hello world", embedding=[1.0, 0.0, 0.0],
                         bot_id="bot-1", session_id="s-1", tenant="t", source="chat",
                         external_id="ext-1", metadata={"topic": "greeting", "n": 1},
                         state_metadata={"step": 2, "active_plan_id": "plan-9"})
    assert result["count"] == 1 and result["ids"] == [result["id"]]
    record = context.get(id=result["id"])
    assert set(record) == RECORD_KEYS
    assert record["text"] == "hello world"
    assert record["binary"] is None
    assert record["role"] == "user" and record["content_type"] == "text/plain"
    assert record["embedding"] == [1.0, 0.0, 0.0]
    assert record["metadata"] == {"topic": "greeting", "n": 1}
    assert record["state_metadata"]["step"] == 2
    assert record["state_metadata"]["active_plan_id"] == "plan-9"
    assert isinstance(record["created_at"], dt.datetime)
    assert record["created_at"].tzinfo is not None
    assert record["lifecycle_status"] == "active"
    assert context.get(external_id="ext-1")["id"] == result["id"]
    assert context.get(id="missing") is None
    assert context.get(external_id="missing") is None


def test_content_kinds_and_data_type_alias(context):
    binary = context.add(role="tool", content=b"\x00\x01bin", content_type="application/x-raw")
    aliased = context.add(content="{}", data_type="application/json")
    got = context.get(id=binary["id"])
    assert got["binary"] == b"\x00\x01bin" and got["text"] is None
    assert got["content_type"] == "application/x-raw"
    assert context.get_blob(binary["id"]) == b"\x00\x01bin"
    assert context.get(id=aliased["id"])["content_type"] == "application/json"
    with pytest.raises(ValueError, match="only one of content_type or data_type"):
        context.add(content="x", content_type="a", data_type="b")
    with pytest.raises(TypeError):
        context.add(content=object())


def test_expiry_needs_aware_datetimes_and_hides_expired_records(context):
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    expired = context.add(content="old", expires_at=past)
    live = context.add(content="new", expires_at=dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc))
    assert [r["id"] for r in context.list()] == [live["id"]]
    everything = context.list(include_expired=True)
    assert {r["id"] for r in everything} == {expired["id"], live["id"]}
    assert context.get(id=live["id"])["expires_at"] == dt.datetime(2100, 1, 1,
                                                                  tzinfo=dt.timezone.utc)
    with pytest.raises(InvalidRequestError, match="expires_at must include timezone"):
        context.add(content="x", expires_at=dt.datetime(2100, 1, 1))


def test_server_assigned_fields_are_refused(context):
    with pytest.raises(InvalidRequestError, match="run_id cannot be set over HTTP"):
        context.add(content="x", run_id="mine")


def test_list_filters_paging_and_order(context):
    ids = [context.add(content=f"m{i}", session_id="even" if i % 2 == 0 else "odd",
                       metadata={"i": i, "tags": ["a", f"t{i}"]})["id"] for i in range(6)]
    assert [r["id"] for r in context.list()] == ids  # created_at, then id
    assert [r["id"] for r in context.list(limit=2, offset=1)] == ids[1:3]
    assert [r["text"] for r in context.list(filters={"session_id": "odd"})] == ["m1", "m3", "m5"]
    assert [r["text"] for r in context.list(filters={"i": 4})] == ["m4"]
    assert [r["text"] for r in context.list(filters={"tags": {"contains": "t2"}})] == ["m2"]
    rows = context.list(limit=1, include_binary=False, include_embedding=False)
    assert rows[0]["embedding"] is None and rows[0]["binary"] is None


def test_search_orders_by_distance(context):
    a = context.add(content="a", embedding=[1.0, 0.0, 0.0])["id"]
    b = context.add(content="b", embedding=[0.0, 1.0, 0.0])["id"]
    c = context.add(content="c", embedding=[0.7, 0.7, 0.0], session_id="s")["id"]
    context.add(content="no vector")
    hits = context.search([1.0, 0.1, 0.0], limit=3)
    assert [h["id"] for h in hits] == [a, c, b]
    assert hits[0]["distance"] <= hits[1]["distance"] <= hits[2]["distance"]
    assert [h["id"] for h in context.search([1.0, 0.1, 0.0], limit=1)] == [a]
    assert [h["id"] for h in context.search([1, 0, 0], filters={"session_id": "s"})] == [c]
    with pytest.raises(InvalidRequestError, match="vector query"):
        context.search("text needs an embedding provider")
    with pytest.raises(InvalidRequestError):
        context.search([1.0, 0.0])  # the wrong dimension


def test_search_takes_and_returns_numpy(base_url, store_name):
    np = pytest.importorskip("numpy")
    ctx = SyncRemoteContext.connect(base_url, store_name, embedding_dim=3, vectors="numpy")
    rid = ctx.add(content="v", embedding=np.array([0.0, 0.0, 1.0], dtype=np.float32))["id"]
    [hit] = ctx.search(np.array([0.0, 0.1, 1.0], dtype=np.float32), limit=1)
    assert hit["id"] == rid
    assert isinstance(hit["embedding"], np.ndarray) and hit["embedding"].dtype == np.float32
    assert hit["embedding"].tolist() == [0.0, 0.0, 1.0]


def test_retrieve_fuses_text_and_vector(context):
    apples = context.add(content="apples and pears", embedding=[0.0, 1.0, 0.0])["id"]
    bananas = context.add(content="bananas", embedding=[1.0, 0.0, 0.0])["id"]
    hits = context.retrieve(text="apples", vector=[0.0, 1.0, 0.0], limit=5)
    assert hits[0]["id"] == apples
    assert set(hits[0]["matched_channels"]) == {"text", "vector"}
    assert hits[0]["score"] > 0 and hits[0]["text_score"] > 0
    assert hits[0]["vector_distance"] == pytest.approx(0.0, abs=1e-6)
    text_only = context.retrieve(text="bananas")
    assert [h["id"] for h in text_only] == [bananas]
    assert text_only[0]["vector_distance"] is None
    overlap = context.retrieve(text="apples", text_scoring="overlap")
    assert [h["id"] for h in overlap] == [apples]
    with pytest.raises(InvalidRequestError, match="only 'rrf'"):
        context.retrieve(text="x", fusion="max")
    with pytest.raises(InvalidRequestError, match="requires text or vector"):
        context.retrieve()


def test_delete_by_id_and_external_id(context):
    first = context.add(content="a", external_id="e1")["id"]
    second = context.add(content="b", external_id="e2")["id"]
    assert context.delete(id=first) is True
    assert context.delete(id=first) is False
    assert context.get(id=first) is None
    assert context.forget(external_id="e2") is True
    assert context.get(id=second) is None
    assert context.list() == []
    with pytest.raises(InvalidRequestError, match="requires either id or external_id"):
        context.delete()
    with pytest.raises(InvalidRequestError, match="only one of id or external_id"):
        context.get(id="a", external_id="b")


def test_upsert_inserts_then_replaces(context):
    first = context.upsert(content="v1", external_id="doc-1", metadata={"v": 1})
    assert first["inserted"] is True and first["replaced_id"] is None
    assert first["record"]["text"] == "v1"
    second = context.upsert(content="v2", external_id="doc-1")
    assert second["inserted"] is False
    assert second["replaced_id"] == first["record"]["id"]
    assert isinstance(second["version"], int)
    assert context.get(external_id="doc-1")["text"] == "v2"
    assert [r["text"] for r in context.list()] == ["v2"]
    with pytest.raises(ValueError, match="Only key='external_id'"):
        context.upsert(content="x", external_id="e", key="id")
    with pytest.raises(InvalidRequestError, match="upsert requires external_id"):
        context.upsert(content="x")


def test_upsert_many_is_all_or_nothing(context):
    results = context.upsert_many([{"content": "a", "external_id": "a"},
                                   {"content": "b", "external_id": "b"}])
    assert [r["inserted"] for r in results] == [True, True]
    again = context.upsert_many([{"content": "a2", "external_id": "a"},
                                 {"content": "c", "external_id": "c"}])
    assert [r["inserted"] for r in again] == [False, True]
    assert again[0]["replaced_id"] == results[0]["record"]["id"]
    with pytest.raises(InvalidRequestError, match=r"records\[1\]"):
        context.upsert_many([{"content": "d", "external_id": "d"}, {"content": "no key"}])
    assert sorted(r["text"] for r in context.list()) == ["a2", "b", "c"]


def test_update_patches_a_copy(context):
    original = context.add(content="keep", external_id="u1", tenant="t1")["id"]
    updated = context.update(id=original, tenant="t2", metadata={"edited": True},
                             embedding=[0.0, 0.0, 1.0])
    assert updated["updated"] is True and updated["replaced_id"] == original
    record = updated["record"]
    assert record["id"] != original and record["text"] == "keep"
    assert record["tenant"] == "t2" and record["metadata"] == {"edited": True}
    assert context.get(external_id="u1")["id"] == record["id"]
    by_external = context.update(external_id="u1", lifecycle_status="contradicted")
    assert by_external["updated"] is True
    missing = context.update(id="nope", tenant="x")
    assert missing["updated"] is False and missing["record"] is None
    with pytest.raises(InvalidRequestError, match="at least one patch field"):
        context.update(id=original)
    with pytest.raises(TypeError):
        context.update(id=original, text="not patchable")


def test_related_follows_relationships(context):
    target = context.add(content="target")["id"]
    cites = context.add(content="cites", relationships=[
        {"target_id": target, "relation": "cites", "weight": 0.5}])["id"]
    refutes = context.add(content="refutes",
                          relationships=[{"target_id": target, "relation": "refutes"}])["id"]
    assert {r["id"] for r in context.related(target)} == {cites, refutes}
    assert [r["id"] for r in context.related(target, relation="cites")] == [cites]
    assert len(context.related(target, limit=1)) == 1
    assert context.get(id=cites)["relationships"] == [
        {"target_id": target, "relation": "cites", "weight": 0.5}]


def test_fetch_payload(context):
    plain = context.add(content="no external payload")["id"]
    with pytest.raises(InvalidRequestError, match="no external payload reference"):
        context.fetch_payload(plain)
    assert context.fetch_payload("missing") is None


def test_version_checkout_and_compaction(base_url, store_name):
    ctx = SyncRemoteContext.connect(base_url, store_name, embedding_dim=3)
    for i in range(3):
        ctx.add(content=f"r{i}")
    stats = ctx.compaction_stats()
    assert set(stats) == {"total_fragments", "is_compacting", "last_compaction", "last_error",
                          "total_compactions"}
    result = ctx.compact()
    assert set(result) == {"fragments_removed", "fragments_added", "files_removed",
                           "files_added"}
    assert ctx.compaction_stats()["total_compactions"] >= stats["total_compactions"]
    version = ctx.version()
    ctx.checkout(version)
    assert ctx.version() == version
    with pytest.raises(InvalidRequestError, match="read-only"):
        ctx.add(content="refused")


def test_connect_without_create_and_errors(base_url, store_name):
    with pytest.raises(NotFoundError, match=f"Context '{store_name}' does not exist"):
        SyncRemoteContext.connect(base_url, store_name, create=False)
    created = SyncRemoteContext.connect(base_url, store_name, embedding_dim=3)
    existing = SyncRemoteContext.connect(base_url, store_name, create=False)
    assert created.uri() == existing.uri()
    with pytest.raises(InvalidRequestError, match="distance metric"):
        SyncRemoteContext.connect(base_url, store_name + "-m", distance_metric="manhattan")
    with pytest.raises(ContextStoreError) as raised:
        existing.add(content="x", embedding=[1.0, 2.0])  # 2 values, dimension 3
    assert type(raised.value) is InvalidRequestError
    existing.close()
    with pytest.raises(InvalidRequestError, match="closed"):
        existing.list()


def test_threads_share_one_context(context):
    errors = []

    def writer(t):
        try:
            for i in range(6):
                context.add(content=f"t{t}-{i}", session_id=f"s{t}")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    texts = [r["text"] for r in context.list()]
    assert sorted(texts) == sorted(f"t{t}-{i}" for t in range(8) for i in range(6))


# --- RemoteContext and AsyncContext ----------------------------------------------------------


def test_remote_context_async_round_trip(base_url, store_name):
    async def run():
        ctx = await RemoteContext.connect(base_url, store_name, embedding_dim=3)
        added = await ctx.add(role="user", content="alpha", embedding=[1.0, 0.0, 0.0],
                              external_id="a")
        await ctx.add(content="beta", embedding=[0.0, 1.0, 0.0])
        assert (await ctx.get(id=added["id"]))["text"] == "alpha"
        assert [r["text"] for r in await ctx.list()] == ["alpha", "beta"]
        hits = await ctx.search([0.9, 0.1, 0.0], limit=1)
        assert hits[0]["text"] == "alpha"
        fused = await ctx.retrieve(text="beta", vector=[0.0, 1.0, 0.0])
        assert fused[0]["text"] == "beta"
        upserted = await ctx.upsert(content="alpha2", external_id="a")
        assert upserted["replaced_id"] == added["id"]
        updated = await ctx.update(external_id="a", tenant="t")
        assert updated["record"]["tenant"] == "t"
        assert await ctx.related("nothing") == []
        assert await ctx.delete(external_id="a") is True
        assert await ctx.fetch_payload("missing") is None
        assert isinstance(ctx.version(), int)  # synchronous
        assert (await ctx.compaction_stats())["is_compacting"] is False
        results = await asyncio.gather(*(ctx.add(content=f"c{i}") for i in range(8)))
        assert len({r["id"] for r in results}) == 8
        with pytest.raises(NotFoundError):
            await RemoteContext.connect(base_url, store_name + "-none", create=False)
        await ctx.aclose()

    asyncio.run(run())


def test_async_context_wraps_a_sync_context(base_url, store_name):
    sync = SyncRemoteContext.connect(base_url, store_name, embedding_dim=3)

    async def run():
        ctx = AsyncContext(sync)
        assert ctx.sync is sync
        assert ctx.uri() == sync.uri()
        assert ctx.version() == sync.version()
        first = await ctx.add("user", "one", embedding=[1.0, 0.0, 0.0])
        await ctx.add_many([{"role": "user", "content": "two"},
                            {"role": "tool", "content": b"three"}])
        assert sorted(r["role"] for r in await ctx.list()) == ["tool", "user", "user"]
        assert (await ctx.get(id=first["id"]))["text"] == "one"
        assert [h["text"] for h in await ctx.search([1.0, 0.0, 0.0], limit=1)] == ["one"]
        assert await ctx.delete(id=first["id"]) is True
        await ctx.checkout(ctx.version())
        with pytest.raises(InvalidRequestError):
            await ctx.add("user", "refused")

    asyncio.run(run())
