"""Context routes (shared/reference/lance-context.md §4.2, §6.7 search) over a real server."""

import json

from conftest import Server, b64

BASE = "/api/v1/contexts"


def make(server, name="ctx", dim=3, metric=None):
    body = {"name": name, "embedding_dim": dim}
    if metric:
        body["distance_metric"] = metric
    r = server.post(BASE, body)
    assert r.status == 201, r
    return r.json()


def add(server, records, name="ctx"):
    r = server.post(f"{BASE}/{name}/records", {"records": records})
    assert r.status == 201, r
    return r.json()["ids"]


def test_create_info_list_delete(server):
    info = make(server)
    assert info["name"] == "ctx" and info["uri"].endswith("ctx.context")
    r = server.post(BASE, {"name": "ctx"})
    assert r.status == 409 and r.error_message() == "Context 'ctx' already exists"
    r = server.post(BASE, {"name": "x", "id_index_type": "hash"})
    assert r.status == 400
    assert r.error_message() == "Invalid id_index_type: 'hash'. Must be 'none', 'zonemap', or 'btree'"
    r = server.post(BASE, {"name": "y", "distance_metric": "manhattan"})
    assert r.status == 400 and "invalid distance metric" in r.error_message()
    assert [c["name"] for c in server.get(BASE).json()["contexts"]] == ["ctx"]
    assert server.get(f"{BASE}/ctx").json()["version"] >= 1
    assert server.get(f"{BASE}/nope").status == 404
    assert server.get(f"{BASE}/nope").error_message() == "Context 'nope' does not exist"
    assert server.request("DELETE", f"{BASE}/ctx").status == 204
    assert server.get(f"{BASE}/ctx").status == 404
    assert server.post(BASE, {"name": "ctx"}).status == 201  # the name is free again


def test_add_generates_ids_and_one_run_id(server):
    make(server)
    ids = add(server, [{"text_payload": "hello"}, {"text_payload": "world", "role": "assistant"}])
    assert len(ids) == 2 and ids[0] != ids[1]
    a = server.get(f"{BASE}/ctx/records/{ids[0]}").json()["record"]
    b = server.get(f"{BASE}/ctx/records/{ids[1]}").json()["record"]
    assert a["id"] == ids[0] and a["text_payload"] == "hello" and a["role"] == "user"
    assert b["role"] == "assistant" and a["run_id"] == b["run_id"]
    assert a["content_type"] == "text/plain"
    assert server.get(f"{BASE}/ctx/records/missing").json() == {"record": None}
    r = server.post(f"{BASE}/ctx/records", {"records": []})
    assert r.status == 400 and r.error_message() == "records array must not be empty"


def test_binary_payload_round_trips_as_base64(server):
    make(server)
    ids = add(server, [{"binary_payload": b64(b"\x00\x01\xfe"), "content_type": "image/png"}])
    rec = server.get(f"{BASE}/ctx/records/{ids[0]}").json()["record"]
    assert rec["binary_payload"] == b64(b"\x00\x01\xfe")


def test_upsert_update_delete(server):
    make(server)
    r = server.request("PUT", f"{BASE}/ctx/records",
                       body={"record": {"external_id": "e1", "text_payload": "v1"}})
    assert r.status == 201 and r.json()["inserted"] is True, r
    first = r.json()["record"]["id"]
    r = server.request("PUT", f"{BASE}/ctx/records",
                       body={"record": {"external_id": "e1", "text_payload": "v2"}})
    assert r.status == 200 and r.json()["inserted"] is False
    assert r.json()["replaced_id"] == first
    got = server.get(f"{BASE}/ctx/records/by-external-id", query={"external_id": "e1"}).json()
    assert got["record"]["text_payload"] == "v2"
    r = server.request("PUT", f"{BASE}/ctx/records", body={"record": {"text_payload": "x"}})
    assert r.status == 400 and r.error_message() == "upsert requires record.external_id"
    r = server.request("PUT", f"{BASE}/ctx/records",
                       body={"record": {"external_id": "e"}, "key": "id"})
    assert r.status == 400
    assert r.error_message() == "upsert key 'id' is not supported; use 'external_id'"
    r = server.request("PUT", f"{BASE}/ctx/records/batch",
                       body={"records": [{"external_id": "e2"}, {"text_payload": "no key"}]})
    assert r.status == 400
    assert r.error_message() == "upsert requires record.external_id (records[1])"
    r = server.request("PUT", f"{BASE}/ctx/records/batch",
                       body={"records": [{"external_id": "e2"}, {"external_id": "e3"}]})
    assert r.status == 200 and [x["inserted"] for x in r.json()["results"]] == [True, True]

    r = server.request("PATCH", f"{BASE}/ctx/records", body={"patch": {"tenant": "t"}})
    assert r.status == 400 and r.error_message() == "update requires either id or external_id"
    r = server.request("PATCH", f"{BASE}/ctx/records",
                       body={"id": "a", "external_id": "b", "patch": {"tenant": "t"}})
    assert r.error_message() == "update accepts only one of id or external_id"
    r = server.request("PATCH", f"{BASE}/ctx/records", body={"external_id": "e1", "patch": {}})
    assert r.error_message() == "update requires at least one patch field"
    r = server.request("PATCH", f"{BASE}/ctx/records",
                       body={"external_id": "e1", "patch": {"tenant": "acme"}})
    assert r.status == 200 and r.json()["updated"] is True and r.json()["record"]["tenant"] == "acme"
    r = server.request("PATCH", f"{BASE}/ctx/records",
                       body={"external_id": "zz", "patch": {"tenant": "acme"}})
    assert r.json()["updated"] is False

    r = server.request("DELETE", f"{BASE}/ctx/records", query={"external_id": "e2"})
    assert r.status == 200 and r.json()["deleted"] is True
    assert server.get(f"{BASE}/ctx/records/by-external-id",
                      query={"external_id": "e2"}).json()["record"] is None
    cur = server.get(f"{BASE}/ctx/records/by-external-id", query={"external_id": "e3"}).json()
    r = server.request("DELETE", f"{BASE}/ctx/records/{cur['record']['id']}")
    assert r.json()["deleted"] is True
    r = server.request("DELETE", f"{BASE}/ctx/records/{cur['record']['id']}")
    assert r.json()["deleted"] is False


def test_list_filters_and_errors(server):
    make(server)
    add(server, [{"text_payload": "a", "tenant": "acme", "metadata": {"team": "x"}},
                 {"text_payload": "b", "tenant": "other"}])
    got = server.get(f"{BASE}/ctx/records", query={"filters": json.dumps({"tenant": "acme"})})
    assert [r["text_payload"] for r in got.json()["records"]] == ["a"]
    got = server.get(f"{BASE}/ctx/records", query={"filters": json.dumps({"team": "x"})})
    assert [r["text_payload"] for r in got.json()["records"]] == ["a"]
    r = server.get(f"{BASE}/ctx/records", query={"filters": "{bad"})
    assert r.status == 400 and r.error_message().startswith("invalid filters JSON")
    assert len(server.get(f"{BASE}/ctx/records", query={"limit": 1}).json()["records"]) == 1


def search(server, body):
    r = server.post(f"{BASE}/ctx/search", body)
    assert r.status == 200, r
    return r.json()["results"]


def test_search_filters_and_lifecycle(server):
    make(server)
    future = "2999-01-01T00:00:00Z"
    past = "2000-01-01T00:00:00Z"
    ids = add(server, [
        {"text_payload": "acme", "embedding": [1, 0, 0], "tenant": "acme",
         "metadata": {"team": "red"},
         "relationships": [{"target_id": "t", "relation": "cites"}]},
        {"text_payload": "tool", "embedding": [0.9, 0.1, 0], "role": "tool"},
        {"text_payload": "expired", "embedding": [1, 0, 0.1], "expires_at": past},
        {"text_payload": "alive", "embedding": [1, 0, 0.2], "expires_at": future},
        {"text_payload": "retired", "embedding": [1, 0.1, 0.1], "external_id": "ret"},
        {"text_payload": "superseded", "embedding": [1, 0.2, 0], "external_id": "sup"},
        {"text_payload": "contradicted", "embedding": [1, 0.3, 0], "external_id": "con"},
    ])
    # Lifecycle fields are not part of an add: they are patched.
    for ext, patch in (("ret", {"retired_at": "2020-01-01T00:00:00Z"}),
                       ("sup", {"lifecycle_status": "superseded"}),
                       ("con", {"lifecycle_status": "contradicted"})):
        r = server.request("PATCH", f"{BASE}/ctx/records", body={"external_id": ext, "patch": patch})
        assert r.status == 200 and r.json()["updated"] is True, r
    texts = lambda rs: sorted(r["record"]["text_payload"] for r in rs)
    q = {"query": [1, 0, 0], "limit": 10}
    assert texts(search(server, q)) == ["acme", "alive", "contradicted", "tool"]
    assert texts(search(server, {**q, "filters": {"tenant": "acme"}})) == ["acme"]
    assert texts(search(server, {**q, "filters": {"team": "red"}})) == ["acme"]
    assert texts(search(server, {**q, "filters": {"role": "tool"}})) == ["tool"]
    assert "expired" in texts(search(server, {**q, "include_expired": True}))
    retired = texts(search(server, {**q, "include_retired": True}))
    assert "retired" in retired and "superseded" in retired
    hit = search(server, {**q, "filters": {"tenant": "acme"}})[0]
    assert hit["record"]["relationships"] in ([], None) and hit["distance"] == 0
    hit = search(server, {**q, "filters": {"tenant": "acme"}, "include_relationships": True})[0]
    assert hit["record"]["relationships"][0]["relation"] == "cites"
    r = server.post(f"{BASE}/ctx/search", {"query": [1, 0]})
    assert r.status == 400 and "does not match embedding dimension" in r.error_message()
    # supersession through an upsert hides the old record
    r = server.request("PUT", f"{BASE}/ctx/records", body={"record": {
        "external_id": "s", "text_payload": "old", "embedding": [0, 0, 1]}})
    r = server.request("PUT", f"{BASE}/ctx/records", body={"record": {
        "external_id": "s", "text_payload": "new", "embedding": [0, 0, 1]}})
    near = texts(search(server, {"query": [0, 0, 1], "limit": 2}))
    assert "new" in near and "old" not in near
    assert ids


def test_retrieve(server):
    make(server)
    add(server, [{"text_payload": "the quick brown fox", "embedding": [1, 0, 0]},
                 {"text_payload": "lazy dogs sleep", "embedding": [0, 1, 0]}])
    r = server.post(f"{BASE}/ctx/retrieve", {"text": "quick fox", "vector": [1, 0, 0], "limit": 2})
    assert r.status == 200, r
    results = r.json()["results"]
    assert results[0]["record"]["text_payload"] == "the quick brown fox"
    assert sorted(results[0]["matched_channels"]) == ["text", "vector"]
    assert results[0]["vector_distance"] == 0 and results[0]["text_score"] > 0
    r = server.post(f"{BASE}/ctx/retrieve", {"text": "fox", "fusion": "linear"})
    assert r.status == 400 and r.error_message() == "retrieve fusion currently supports only 'rrf'"
    r = server.post(f"{BASE}/ctx/retrieve", {"limit": 1})
    assert r.status == 400


def test_related_version_and_compaction(server):
    make(server)
    ids = add(server, [{"text_payload": "a"}])
    add(server, [{"text_payload": "b", "relationships": [{"target_id": ids[0], "relation": "r"}]}])
    rel = server.get(f"{BASE}/ctx/records/related", query={"target_id": ids[0]}).json()
    assert [r["text_payload"] for r in rel["records"]] == ["b"]
    v = server.get(f"{BASE}/ctx/version").json()["version"]
    assert v >= 1
    assert server.post(f"{BASE}/ctx/compact").status == 200
    assert server.get(f"{BASE}/ctx/compact/stats").json()["total_compactions"] == 1


def test_payload_route(server):
    make(server)
    ids = add(server, [{"text_payload": "no payload"}])
    r = server.get(f"{BASE}/ctx/records/{ids[0]}/payload")
    assert r.status == 400
    assert r.error_message() == f"record '{ids[0]}' has no external payload reference to fetch"
    r = server.get(f"{BASE}/ctx/records/nope/payload")
    assert r.status == 404 and r.error_message() == "Record 'nope' does not exist"


def test_context_writes_merge_once_eight_generations_pend(server, tmp_path):
    """Every context add seals a generation; by default the write that makes 8 pending merges
    them, so pending generations stay bounded. --context-merge-after-generations 0 turns it off."""
    make(server)
    for i in range(20):
        add(server, [{"text_payload": f"t{i}"}])
    stats = server.get(f"{BASE}/ctx/stats").json()
    assert stats["rows"] == 20 and 0 < stats["pending_generations"] < 8, stats
    listed = server.get(f"{BASE}/ctx/records", query={"limit": 100}).json()
    assert len(listed["records"]) == 20

    off = Server(str(tmp_path / "off"), args=["--context-merge-after-generations", "0"])
    try:
        make(off)
        for i in range(10):
            add(off, [{"text_payload": f"t{i}"}])
        assert off.get(f"{BASE}/ctx/stats").json()["pending_generations"] == 10
    finally:
        assert off.stop() == 0
