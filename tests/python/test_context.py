"""strata.Context: lance-context's Context API (§5.1) on the C++ context store."""

import datetime
import json
import math
import os
import threading

import numpy as np
import pytest

import strata

UTC = datetime.timezone.utc


@pytest.fixture(params=["path", "memory", "remote"])
def ctx(request, tmp_path, store_name):
    """A Context in a directory, in memory, or on a `strata serve` (its remote twin, so the
    same tests hold both paths to one behaviour). Tests of what the HTTP API has no route or
    field for are marked embedded_only."""
    if request.param == "remote":
        if request.node.get_closest_marker("embedded_only"):
            pytest.skip("the HTTP API has no route or field for this")
        from strata.remote import SyncRemoteContext
        c = SyncRemoteContext.connect(request.getfixturevalue("base_url"), store_name,
                                      embedding_dim=3, vectors="numpy")
    elif request.param == "path":
        c = strata.Context(str(tmp_path / "store"), embedding_dim=3)
    else:
        c = strata.Context(f"memory://ctx-{os.getpid()}-{store_name}", embedding_dim=3)
    with c:
        yield c


@pytest.mark.embedded_only
def test_add_and_list_round_trip_every_field(ctx):
    created = datetime.datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
    expires = datetime.datetime(2999, 1, 1, tzinfo=UTC)
    ctx.add(
        "assistant",
        "the answer is 42",
        embedding=[0.5, 0.25, 0.125],
        bot_id="bot",
        session_id="s1",
        tenant="acme",
        source="chat",
        external_id="ext-1",
        run_id="run-1",
        created_at=created,
        state_metadata={"step": 3, "active_plan_id": "p", "tokens_used": 9, "custom": "c"},
        metadata={"z": 1, "a": {"b": [1, 2]}},
        relationships=[{"target_id": "t", "relation": "cites", "weight": 0.5}],
        expires_at=expires,
        retention_policy="keep",
        payload_uri="docs/a.txt",
        payload_size=3,
        payload_checksum="abc",
    )
    [r] = ctx.list()
    assert r["role"] == "assistant" and r["text"] == "the answer is 42"
    assert r["content_type"] == "text/plain" and r["binary"] is None
    assert r["created_at"] == created and r["expires_at"] == expires
    assert isinstance(r["embedding"], np.ndarray) and r["embedding"].dtype == np.float32
    assert r["embedding"].tolist() == [0.5, 0.25, 0.125]
    assert r["metadata"] == {"z": 1, "a": {"b": [1, 2]}}
    assert r["state_metadata"] == {"step": 3, "active_plan_id": "p", "tokens_used": 9, "custom": "c"}
    assert r["relationships"] == [{"target_id": "t", "relation": "cites", "weight": 0.5}]
    for key in ("bot_id", "session_id", "tenant", "source", "external_id", "run_id"):
        assert r[key] == {"bot_id": "bot", "session_id": "s1", "tenant": "acme",
                          "source": "chat", "external_id": "ext-1", "run_id": "run-1"}[key]
    assert r["lifecycle_status"] == "active"
    assert set(r) == {
        "id", "external_id", "run_id", "bot_id", "session_id", "tenant", "source", "role",
        "content_type", "text", "binary", "payload_uri", "payload_size", "payload_checksum",
        "embedding", "created_at", "state_metadata", "metadata", "relationships", "expires_at",
        "retention_policy", "lifecycle_status", "retired_at", "retired_reason", "supersedes_id",
        "superseded_by_id"}


def test_content_normalisation(ctx):
    ctx.add("user", b"\x00\x01raw")
    ctx.add("user", "typed", data_type="text/markdown")
    rows = {r["content_type"]: r for r in ctx.list()}
    assert rows["application/octet-stream"]["binary"] == b"\x00\x01raw"
    assert rows["text/markdown"]["text"] == "typed"
    with pytest.raises(ValueError, match="content_type or data_type"):
        ctx.add("user", "x", content_type="a/b", data_type="c/d")
    with pytest.raises(ValueError, match="expires_at must include timezone information"):
        ctx.add("user", "x", expires_at=datetime.datetime(2099, 1, 1))
    with pytest.raises(TypeError, match="content must be str, bytes"):
        ctx.add("user", 42)
    with pytest.raises(TypeError, match="unexpected"):
        ctx.add("user", "x", colour="red")
    assert len(ctx.list()) == 2  # the refused adds wrote nothing


@pytest.mark.embedded_only
def test_dataframe_content_is_stored_as_arrow_ipc(ctx, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "i": np.array([1, -2, 3], dtype=np.int64),
        "f": [0.5, float("nan"), 2.25],
        "b": [True, False, True],
        "s": ["a", None, "c"],
        "t": pd.to_datetime(["2024-01-01T00:00:00.000001", None, "2024-03-01"]).tz_localize("UTC"),
        "n": pd.array([1, None, 3], dtype="Int64"),
    })
    ctx.add("tool", frame)
    [r] = ctx.list()
    assert r["content_type"] == "application/vnd.apache.arrow.stream"
    # strata's own Arrow reader (the CLI) reads the stream back: same columns, nulls and values.
    path = tmp_path / "frame.arrows"
    path.write_bytes(r["binary"])
    import subprocess
    strata_bin = os.path.join(os.environ["STRATA_PYTHON_BUILD_DIR"], "strata")
    out = subprocess.run([strata_bin, "arrow", "cat", str(path), "--format", "jsonl"],
                         capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["i"] for row in rows] == [1, -2, 3]
    assert [row["f"] for row in rows] == [0.5, None, 2.25]
    assert [row["b"] for row in rows] == [True, False, True]
    assert [row["s"] for row in rows] == ["a", None, "c"]
    assert rows[1]["t"] is None and rows[0]["t"].startswith("2024-01-01T00:00:00.000001")
    assert [row["n"] for row in rows] == [1, None, 3]
    with pytest.raises(strata.InvalidRequestError, match="column 'x' mixes values"):
        ctx.add("tool", pd.DataFrame({"x": [1, "a"]}))
    assert len(ctx.list()) == 1
    # A fixed-offset time zone is named as Arrow names it.
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    data = strata._strata.columns_to_arrow_stream(
        [("t", np.array([1704060000 * 10**6], dtype=np.int64), "+02:00")])
    frame_data = strata.context.normalise_content(
        pd.DataFrame({"t": pd.to_datetime(["2024-01-01"]).tz_localize(plus2)}), None)[0]
    assert frame_data["binary_payload"] == data
    with pytest.raises(strata.InvalidRequestError, match="needs numeric values"):
        strata._strata.columns_to_arrow_stream([("t", np.array([1, None], dtype=object), "")])


@pytest.mark.embedded_only
def test_add_many_is_all_or_nothing(ctx):
    ctx.add_many([{"role": "user", "content": "a"}, {"role": "user", "content": "b", "id": "b"}])
    assert sorted(r["text"] for r in ctx.list()) == ["a", "b"]
    with pytest.raises(strata.InvalidRequestError, match="id 'b' already exists"):
        ctx.add_many([{"role": "user", "content": "c"}, {"role": "user", "content": "d", "id": "b"}])
    with pytest.raises(ValueError, match="requires 'content'"):
        ctx.add_many([{"role": "user"}])
    assert len(ctx.list()) == 2


def test_search_orders_by_distance_and_filters(ctx):
    ctx.add("user", "x", embedding=[1, 0, 0], session_id="a")
    ctx.add("user", "y", embedding=[0, 1, 0], session_id="b")
    ctx.add("user", "z", embedding=np.array([0.9, 0.1, 0], dtype=np.float32), session_id="a")
    hits = ctx.search([1, 0, 0], limit=2)
    assert [h["text"] for h in hits] == ["x", "z"]
    assert hits[0]["distance"] == pytest.approx(0.0)
    assert hits[0]["distance"] <= hits[1]["distance"]
    assert [h["text"] for h in ctx.search([0, 1, 0], filters={"session_id": "a"})] == ["z", "x"]
    assert ctx.search([1, 0, 0], include_embedding=False)[0]["embedding"] is None
    with pytest.raises(strata.InvalidRequestError, match="query length 2 does not match"):
        ctx.search([1, 0])
    with pytest.raises(strata.InvalidRequestError, match="embedding provider"):
        ctx.search("text needs a provider")


def test_retrieve_fuses_text_and_vector(ctx):
    ctx.add_many([
        {"role": "user", "content": "cats purr softly", "embedding": [1, 0, 0],
         "external_id": "cat"},
        {"role": "user", "content": "dogs bark loudly", "embedding": [0, 1, 0],
         "external_id": "dog"},
        {"role": "user", "content": "no vector here about cats", "external_id": "plain"},
    ])
    hits = ctx.retrieve(text="cats", vector=[1, 0, 0], limit=3)
    assert hits[0]["external_id"] == "cat"
    assert hits[0]["matched_channels"] == ["vector", "text"]
    assert hits[0]["score"] >= hits[1]["score"]
    by_key = {h["external_id"]: h for h in hits}
    assert by_key["plain"]["vector_distance"] is None and by_key["plain"]["text_score"] > 0
    with pytest.raises(ValueError, match="only 'rrf'"):
        ctx.retrieve(text="cats", fusion="max")
    with pytest.raises(strata.InvalidRequestError, match="retrieve requires text or vector"):
        ctx.retrieve()


def test_upsert_update_delete_visibility(ctx):
    first = ctx.upsert("user", "v1", external_id="k")
    assert first["inserted"] and first["replaced_id"] is None
    second = ctx.upsert("user", "v2", external_id="k")
    assert not second["inserted"] and second["replaced_id"] == first["record"]["id"]
    assert [r["text"] for r in ctx.list()] == ["v2"]
    assert len(ctx.list(include_retired=True)) == 2
    updated = ctx.update(external_id="k", metadata={"n": 1})
    assert updated["updated"] and updated["replaced_id"] == second["record"]["id"]
    assert updated["record"]["supersedes_id"] == second["record"]["id"]
    assert ctx.get(external_id="k")["metadata"] == {"n": 1}
    assert ctx.update(id="missing", metadata={"n": 2})["updated"] is False
    with pytest.raises(ValueError, match="Only key='external_id'"):
        ctx.upsert("user", "x", external_id="k", key="id")
    with pytest.raises(ValueError, match="upsert requires external_id"):
        ctx.upsert("user", "x")
    with pytest.raises(strata.InvalidRequestError, match="id or external_id"):
        ctx.get()
    rid = ctx.get(external_id="k")["id"]
    assert ctx.forget(id=rid) is True
    assert ctx.get(id=rid) is None
    assert ctx.delete(id=rid) is False


@pytest.mark.embedded_only
def test_lifecycle_flags(ctx):
    past = datetime.datetime(2000, 1, 1, tzinfo=UTC)
    ctx.add("user", "expired", expires_at=past)
    ctx.add("user", "retired", lifecycle_status="retired")
    ctx.add("user", "contradicted", lifecycle_status="contradicted")
    assert [r["text"] for r in ctx.list()] == ["contradicted"]
    assert {r["text"] for r in ctx.list(include_expired=True)} == {"expired", "contradicted"}
    assert {r["text"] for r in ctx.list(include_retired=True)} == {"retired", "contradicted"}


@pytest.mark.embedded_only
def test_related_blob_and_payloads(ctx):
    ctx.add_many([{"role": "user", "content": "target", "id": "t"}])
    ctx.add("user", "cites", relationships=[{"target_id": "t", "relation": "cites"}])
    ctx.add("user", "old", relationships=[{"target_id": "t", "relation": "cites"}],
            expires_at=datetime.datetime(2000, 1, 1, tzinfo=UTC))
    assert [r["text"] for r in ctx.related("t")] == ["cites"]
    assert [r["text"] for r in ctx.related("t", "other")] == []
    assert {r["text"] for r in ctx.related("t", include_expired=True)} == {"cites", "old"}
    ctx.add_many([{"role": "user", "content": b"blob", "id": "b"}])
    assert ctx.get_blob("b") == b"blob"
    assert ctx.get_blob("none") is None
    assert ctx.put_payload("docs/a.txt", b"abc") == 3
    ctx.add_many([{"role": "user", "content": "ref", "id": "r", "payload_uri": "docs/a.txt",
                   "payload_size": 3}])
    assert ctx.fetch_payload("r") == b"abc"
    with pytest.raises(strata.InvalidRequestError, match="no external payload reference"):
        ctx.fetch_payload("b")


@pytest.mark.embedded_only
def test_snapshot_fork_checkout(ctx):
    ctx.add("user", "one")
    ctx.flush()
    label = ctx.snapshot()
    assert isinstance(label, str)
    ctx.add("user", "two")
    branch = ctx.fork("experiment")
    assert branch.branch() == "experiment" and ctx.branch() == "main"
    branch.add("user", "branch only")
    assert {r["text"] for r in branch.list()} == {"one", "two", "branch only"}
    assert {r["text"] for r in ctx.list()} == {"one", "two"}
    ctx.checkout(label)
    assert [r["text"] for r in ctx.list()] == ["one"]
    with pytest.raises(strata.ContextStoreError):
        ctx.add("user", "pinned handles do not write")
    branch.close()


def test_compaction(ctx):
    for i in range(3):
        ctx.add("user", f"r{i}")
        ctx.flush()
    stats = ctx.compaction_stats()
    assert set(stats) == {"total_fragments", "is_compacting", "last_compaction", "last_error",
                          "total_compactions"}
    result = ctx.compact()
    assert set(result) == {"fragments_removed", "fragments_added", "files_removed", "files_added"}
    after = ctx.compaction_stats()
    assert after["total_compactions"] == 1 and after["last_compaction"] is not None
    assert len(ctx.list()) == 3


def test_embedding_provider_embeds_text_on_add_and_query(any_uri):
    class Provider:
        calls = 0

        def embed(self, texts):
            Provider.calls += 1
            return [[float(len(t)), 1.0, 0.0] for t in texts]

    with strata.Context(any_uri, embedding_dim=3, embedding_provider=Provider()) as c:
        c.add_many([{"role": "user", "content": "ab"}, {"role": "user", "content": "abcd"}])
        assert Provider.calls == 1  # batched
        assert c.search("abcd", limit=1)[0]["text"] == "abcd"


@pytest.mark.embedded_only
def test_ingest(ctx, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"who": "user", "body": f"m{i}", "k": f"e{i}"})
                              for i in range(5)) + "\n")
    report = ctx.ingest_jsonl(path, field_map={"role": "who", "content": "body",
                                               "external_id": "k"}, batch_size=2)
    assert report == {"processed": 5, "inserted": 5, "updated": 0, "batches": 3}
    row = ctx.get(external_id="e0")
    assert row["source"] == "raw" and row["metadata"]["raw_record"]["body"] == "m0"
    report = ctx.ingest_records([{"role": "user", "content": "new", "external_id": "e1"}],
                                mode="upsert")
    assert report["updated"] == 1 and ctx.get(external_id="e1")["text"] == "new"
    report = ctx.ingest_messages([{"role": "user", "content": "hi"},
                                  {"role": "assistant", "content": "hello"}],
                                 session_id="s", external_id_prefix="chat")
    assert report["inserted"] == 2
    assert ctx.get(external_id="chat#message-2")["text"] == "hello"


def test_options_are_checked(tmp_path):
    with pytest.raises(strata.InvalidRequestError, match="invalid distance metric"):
        strata.Context(str(tmp_path / "a"), distance_metric="manhattan")
    with pytest.raises(ValueError, match="id_index_type"):
        strata.Context(str(tmp_path / "b"), id_index_type="hash")
    with strata.Context(str(tmp_path / "c"), embedding_dim=4, distance_metric="cosine") as c:
        assert c.embedding_dim == 4 and c.distance_metric == "cosine"
    with pytest.raises(strata.InvalidRequestError):
        strata.Context(str(tmp_path / "c"), embedding_dim=8)  # the persisted dim is 4
    with pytest.warns(DeprecationWarning):
        with pytest.raises(strata.InvalidRequestError):  # a local store takes no AWS keys
            strata.Context(str(tmp_path / "d"), region="us-east-1")


def test_close_and_reopen(store_uri):
    c = strata.Context(store_uri, embedding_dim=3)
    c.add("user", "kept")
    c.close()
    assert c.closed
    with pytest.raises(strata.InvalidRequestError, match="is closed"):
        c.list()
    with strata.Context(store_uri) as again:
        assert [r["text"] for r in again.list()] == ["kept"]
        assert again.embedding_dim == 3


def test_threads_share_one_context(memory_uri):
    with strata.Context(memory_uri, embedding_dim=3) as c:
        def work(t):
            for i in range(20):
                c.add("user", f"{t}-{i}", embedding=[t, i, 1])
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(c.list(include_embedding=False)) == 160


@pytest.mark.parametrize("root", ["path", "memory"])
def test_context_namespace(root, tmp_path, memory_uri):
    root_uri = str(tmp_path / "ns") if root == "path" else memory_uri
    ns = strata.ContextNamespace(root_uri, ["tenant", "bot_id"], embedding_dim=3)
    assert ns.manifest_uri() == root_uri + "/_namespace.json"
    assert ns.partition_uri(tenant="acme corp", bot_id="b/1") == (
        root_uri + "/tenant=acme%20corp/bot_id=b%2F1")
    with ns.context(tenant="acme", bot_id="b1") as a, ns.context(tenant="beta", bot_id="b1") as b:
        a.add("user", "for acme")
        b.add("user", "for beta", tenant="override")
        [ra] = a.list()
        assert (ra["tenant"], ra["bot_id"]) == ("acme", "b1")
        assert b.list()[0]["tenant"] == "override"
        assert [r["text"] for r in a.list()] == ["for acme"]  # partitions are isolated
    assert ns.partitions() == [{"tenant": "acme", "bot_id": "b1"},
                               {"tenant": "beta", "bot_id": "b1"}]
    again = strata.ContextNamespace.create(root_uri, ["tenant", "bot_id"], embedding_dim=3)
    assert len(again.partitions()) == 2
    with again.context(tenant="acme", bot_id="b1") as a:
        assert [r["text"] for r in a.list()] == ["for acme"]
    with pytest.raises(strata.InvalidRequestError, match="has fields"):
        strata.ContextNamespace(root_uri, ["tenant"])
    with pytest.raises(ValueError, match="missing bot_id"):
        ns.context(tenant="acme")
    with pytest.raises(ValueError, match="invalid selector field"):
        strata.ContextNamespace(root_uri + "-x", ["colour"])


def _read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.mark.embedded_only
def test_export_training_sft_rollout_and_preference(ctx, tmp_path):
    t0 = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    def at(s):
        return t0 + datetime.timedelta(seconds=s)
    ctx.add("user", "what is 2+2?", session_id="a", created_at=at(0))
    ctx.add("assistant", "4", session_id="a", created_at=at(1), metadata={"reward": 1.0})
    ctx.add("assistant", "5", session_id="a", created_at=at(2), metadata={"reward": 0.0})
    ctx.add("user", "capital of France?", session_id="b", created_at=at(3))
    ctx.add("assistant", "Paris", session_id="b", created_at=at(4), metadata={"reward": 0.5})
    ctx.add("tool", b"binary is skipped", session_id="b", created_at=at(5))

    sft = ctx.export_training(tmp_path / "sft.jsonl")
    rows = _read_jsonl(tmp_path / "sft.jsonl")
    assert sft["examples"] == 2 and sft["skipped"]["no_text"] == 1
    assert rows[0]["messages"] == [{"role": "user", "content": "what is 2+2?"},
                                   {"role": "assistant", "content": "4"},
                                   {"role": "assistant", "content": "5"}]

    ctx.export_training(tmp_path / "ro.jsonl", task="rollout", min_reward=0.75)
    [ro] = _read_jsonl(tmp_path / "ro.jsonl")
    assert ro["group"] == "a" and ro["total_reward"] == 1.0
    assert [s["reward"] for s in ro["steps"]] == [None, 1.0, 0.0]

    pref = ctx.export_training(tmp_path / "p.jsonl", task="preference")
    [p] = _read_jsonl(tmp_path / "p.jsonl")
    assert (p["chosen"], p["rejected"]) == ("4", "5")
    assert p["prompt"] == [{"role": "user", "content": "what is 2+2?"}]
    assert pref["skipped"]["no_preference"] == 1  # session b has one scored answer
    ctx.export_training(tmp_path / "u.jsonl", task="preference", preference_form="unpaired")
    assert sorted(r["completion"] for r in _read_jsonl(tmp_path / "u.jsonl")) == ["4", "5", "Paris"]
    ctx.export_training(tmp_path / "r.jsonl", task="preference", preference_form="ranked")
    assert _read_jsonl(tmp_path / "r.jsonl")[0]["rewards"] == [1.0, 0.0]
    with pytest.raises(ValueError, match="task must be one of"):
        ctx.export_training(tmp_path / "x.jsonl", task="dpo")


@pytest.mark.embedded_only
def test_export_training_dedup_decontamination_split_and_version(ctx, tmp_path):
    for i in range(20):
        ctx.add("user", f"question number {i % 10}", session_id=f"s{i}")
    label = ctx.snapshot("twenty")
    ctx.add("user", "added after the snapshot", session_id="late")
    dedup = ctx.export_training(tmp_path / "d.jsonl", dedup_threshold=1.0)
    assert dedup["examples"] == 11 and dedup["skipped"]["duplicates"] == 10
    clean = ctx.export_training(tmp_path / "c.jsonl", decontaminate_against=["question number 3"],
                                decontaminate_threshold=0.9)
    assert clean["skipped"]["contaminated"] == 2
    split = ctx.export_training(tmp_path / "s.jsonl", split={"eval_fraction": 0.5, "seed": 1},
                                emit_stats=True)
    assert split["examples"] + split["eval_examples"] == 21 and split["eval_examples"] > 0
    assert len(_read_jsonl(split["eval_path"])) == split["eval_examples"]
    assert json.load(open(split["stats_path"]))["examples"] == split["examples"]
    again = ctx.export_training(tmp_path / "s2.jsonl", split={"eval_fraction": 0.5, "seed": 1})
    assert again["eval_examples"] == split["eval_examples"]  # deterministic
    old = ctx.export_training(tmp_path / "v.jsonl", version=label)
    assert old["examples"] == 20
    ctx.add("user", "the Context itself was not pinned", session_id="after")


@pytest.mark.embedded_only
def test_evaluate_metrics(ctx):
    ctx.add_many([
        {"role": "user", "content": "alpha", "embedding": [1, 0, 0], "id": "a"},
        {"role": "user", "content": "beta", "embedding": [0.9, 0.1, 0], "id": "b"},
        {"role": "user", "content": "gamma", "embedding": [0, 1, 0], "id": "c",
         "external_id": "ext-c"},
    ])
    label = ctx.snapshot("v1")
    queries = [
        {"id": "q1", "vector": [1, 0, 0], "relevant_ids": ["b"]},       # rank 2
        {"id": "q2", "vector": [0, 1, 0], "relevant_ids": ["ext-c"]},   # rank 1, by external id
        {"id": "q3", "vector": [0, 0, 1], "relevant_ids": ["missing"]},
    ]
    r = ctx.evaluate(queries, k=2)
    per = {q["id"]: q for q in r["per_query"]}
    assert per["q1"]["mrr"] == 0.5 and per["q1"]["recall"] == 1.0
    assert per["q1"]["precision"] == 0.5
    assert per["q1"]["ndcg"] == pytest.approx(1 / math.log2(3))
    assert per["q2"]["mrr"] == 1.0 and per["q2"]["ndcg"] == 1.0
    assert per["q3"]["hit_rate"] == 0.0
    assert r["mrr"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert r["hit_rate"] == pytest.approx(2 / 3) and r["queries"] == 3
    hybrid = ctx.evaluate([{"text": "gamma", "vector": [0, 1, 0], "relevant_ids": ["c"]}],
                          mode="hybrid", k=1)
    assert hybrid["recall"] == 1.0
    ctx.delete(id="b")
    versions = ctx.evaluate_versions(queries[:1], label, ctx.version(), k=2)
    assert versions["baseline"]["recall"] == 1.0
    with pytest.raises(ValueError, match="relevant_ids"):
        ctx.evaluate([{"vector": [1, 0, 0]}])


def test_single_adds_keep_pending_generations_bounded(ctx):
    # Every add seals a generation; the Context merges its shard every 8 of them, as the
    # server does, so reads and seals do not slow down add after add.
    for i in range(20):
        ctx.add("user", f"m{i}")
    assert ctx.compaction_stats()["total_fragments"] >= 2
    assert len(ctx.list(include_embedding=False)) == 20
