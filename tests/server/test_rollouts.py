"""Rollout routes (shared/reference/lance-context.md §4.2, §6.7) over a real server."""

import pytest

from conftest import Server, b64, multipart

BASE = "/api/v1/rollouts"


def rollout(i, **extra):
    r = {"id": f"r{i}", "rollout_id": f"traj{i % 3}", "sequence_order": i, "content": f"step {i}"}
    r.update(extra)
    return r


@pytest.fixture
def deferred(data_dir):
    # No flush sweeps during the test: appends stay invisible until flushed.
    s = Server(data_dir, args=["--flush-interval", "3600"])
    yield s
    assert s.stop() == 0, s.output()


def test_create_list_info_delete(server):
    r = server.post(BASE, {"name": "exp1"})
    assert r.status == 201, r
    info = r.json()
    assert info["name"] == "exp1" and info["uri"].endswith("exp1.rollout") and "version" in info
    assert server.post(BASE, {"name": "exp1"}).status == 409
    assert server.post(BASE, {"name": "exp1"}).error_message() == "Rollout store 'exp1' already exists"
    assert server.post(BASE, {"name": "exp2"}).status == 201
    listed = server.get(BASE).json()["stores"]
    assert [s["name"] for s in listed] == ["exp1", "exp2"]
    assert "version" not in listed[0]
    assert server.get(f"{BASE}/exp1").json()["name"] == "exp1"
    assert server.request("DELETE", f"{BASE}/exp1").status == 204
    r = server.get(f"{BASE}/exp1")
    assert r.status == 404 and r.error_code() == "NOT_FOUND"
    assert r.error_message() == "Rollout store 'exp1' does not exist"
    r = server.request("DELETE", f"{BASE}/exp1")
    assert r.status == 404


@pytest.mark.parametrize("name", ["../escape", "nested%2Fstore", "nested%5Cstore", "x" * 129,
                                  "_registry", "_stats", ".hidden", "a%20b"])
def test_invalid_names_rejected_before_the_registry(server, data_dir, name):
    import os
    import urllib.parse
    r = server.post(BASE, {"name": urllib.parse.unquote(name)})
    assert r.status == 400, r
    assert r.error_code() == "INVALID_REQUEST"
    r = server.get(f"{BASE}/{name}/records/x")
    assert r.status in (400, 404), r
    # Nothing was registered or created for it.
    assert not os.path.exists(os.path.join(data_dir, "_registry", "rollout")) or \
        os.listdir(os.path.join(data_dir, "_registry", "rollout")) == []


def test_unknown_store_is_404(server):
    r = server.post(f"{BASE}/nope/records", {"records": [rollout(1)]})
    assert r.status == 404 and r.error_message() == "Rollout store 'nope' does not exist"


@pytest.mark.parametrize("query,flushed", [
    ("flush=true", True), ("flush=TRUE", True), ("flush=True", True), ("flush=1", True),
    ("flush", True), ("flush=false", False), ("flush=0", False), ("flush=yes", False),
    ("noflush", False), ("flushed=true", False), ("", False)])
def test_flush_parameter(deferred, query, flushed):
    deferred.post(BASE, {"name": "f"})
    path = f"{BASE}/f/records" + (f"?{query}" if query else "")
    r = deferred.post(path, {"records": [rollout(1)]})
    assert r.status == 201, r
    assert r.json()["ids"] == ["r1"] and r.json()["count"] == 1
    got = deferred.get(f"{BASE}/f/records/r1").json()["record"]
    assert (got is not None) == flushed


def test_flush_publishes_earlier_unflushed_appends(deferred):
    deferred.post(BASE, {"name": "f"})
    assert deferred.post(f"{BASE}/f/records", {"records": [rollout(1)]}).status == 201
    assert deferred.get(f"{BASE}/f/records/r1").json()["record"] is None
    assert deferred.post(f"{BASE}/f/records?flush=true", {"records": [rollout(2)]}).status == 201
    assert deferred.get(f"{BASE}/f/records/r1").json()["record"]["id"] == "r1"
    assert deferred.get(f"{BASE}/f/records/r2").json()["record"]["id"] == "r2"


def test_append_defaults_and_list(server):
    server.post(BASE, {"name": "e"})
    recs = [rollout(i) for i in range(5)]
    recs[0]["problem_id"] = "p0"
    assert server.post(f"{BASE}/e/records?flush=1", {"records": recs}).status == 201
    got = server.get(f"{BASE}/e/records/r1").json()["record"]
    assert got["role"] == "assistant" and got["content_type"] == "text/plain"
    assert got["problem_id"] == "traj1"  # defaults to rollout_id
    assert got["created_at"]  # filled with now
    assert server.get(f"{BASE}/e/records/r0").json()["record"]["problem_id"] == "p0"
    listed = server.get(f"{BASE}/e/records").json()["records"]
    assert [r["id"] for r in listed] == [f"r{i}" for i in range(5)]
    page = server.get(f"{BASE}/e/records", query={"limit": 2, "offset": 1}).json()["records"]
    assert [r["id"] for r in page] == ["r1", "r2"]
    filtered = server.get(f"{BASE}/e/records",
                          query={"filters": '{"rollout_id": "traj1"}'}).json()["records"]
    assert sorted(r["id"] for r in filtered) == ["r1", "r4"]


def test_list_filter_errors(server):
    server.post(BASE, {"name": "e"})
    r = server.get(f"{BASE}/e/records", query={"filters": "{not json"})
    assert r.status == 400 and r.error_message().startswith("invalid rollout filters: ")
    r = server.get(f"{BASE}/e/records", query={"filters": '{"reward": 1}'})
    assert r.status == 400 and "unsupported rollout filter 'reward'" in r.error_message()


def test_empty_and_invalid_appends_write_nothing(server):
    server.post(BASE, {"name": "e"})
    r = server.post(f"{BASE}/e/records", {"records": []})
    assert r.status == 400 and r.error_message() == "records array must not be empty"
    r = server.post(f"{BASE}/e/records?flush=1", {"records": [rollout(1), {"rollout_id": "x"}]})
    assert r.status == 400, r
    r = server.request("POST", f"{BASE}/e/records", body=b"id,rollout_id\n",
                       headers={"Content-Type": "text/csv"})
    assert r.status == 400
    assert r.error_message() == \
        "unsupported Content-Type 'text/csv': expected application/json or multipart/form-data"
    r = server.request("POST", f"{BASE}/e/records?flush=1", body=b"{not json",
                       headers={"Content-Type": "application/json"})
    assert r.status == 400 and r.error_code() == "INVALID_REQUEST"
    assert server.get(f"{BASE}/e/records").json()["records"] == []


def test_json_blob_is_projected_out_of_reads_but_downloadable(server):
    server.post(BASE, {"name": "b"})
    blob = bytes(range(256)) * 4096  # 1 MiB: four 256 KiB chunks
    r = server.post(f"{BASE}/b/records?flush=1",
                    {"records": [rollout(1, binary_payload=b64(blob), payload_size=len(blob))]})
    assert r.status == 201, r
    rec = server.get(f"{BASE}/b/records/r1").json()["record"]
    assert rec.get("binary_payload") is None and rec["payload_size"] == len(blob)
    listed = server.get(f"{BASE}/b/records").json()["records"]
    assert listed[0].get("binary_payload") is None
    got = server.get(f"{BASE}/b/records/r1/blob")
    assert got.status == 200 and got.body == blob
    assert got.headers["Content-Type"] == "application/octet-stream"
    assert int(got.headers["Content-Length"]) == len(blob)
    r = server.get(f"{BASE}/b/records/zzz/blob")
    assert r.status == 404 and r.error_message() == "Rollout 'zzz' has no payload"


def test_multipart_attaches_blobs_by_index(server):
    import json
    server.post(BASE, {"name": "m"})
    meta = {"records": [rollout(0), rollout(1, payload_size=3), rollout(2)]}
    ctype, body = multipart([("metadata", json.dumps(meta).encode()), ("1", b"abc"),
                             ("2", b"\x00\xff" * 1000)])
    r = server.request("POST", f"{BASE}/m/records?flush=true", body=body,
                       headers={"Content-Type": ctype})
    assert r.status == 201, r
    assert r.json()["ids"] == ["r0", "r1", "r2"]
    assert server.get(f"{BASE}/m/records/r1/blob").body == b"abc"
    assert server.get(f"{BASE}/m/records/r2/blob").body == b"\x00\xff" * 1000
    assert server.get(f"{BASE}/m/records/r0/blob").status == 404


@pytest.mark.parametrize("parts,message", [
    ([("blob", b"{}")], "first multipart part must be named 'metadata', found 'blob'"),
    ([(None, b"{}")], None),
    ([("metadata", None), ("x", b"1")], "unexpected multipart part 'x': expected a record index"),
    ([("metadata", None), ("2", b"1")], "multipart part '2' has no matching record (2 records supplied)"),
    ([("metadata", None), ("0", b"1"), ("0", b"2")], "duplicate multipart part for record index 0"),
    ([("metadata", None), ("1", b"12")], "record index 1: payload_size 3 does not match received 2 bytes"),
    ([("metadata", None)], "record index 1 declares payload_size but no binary part was supplied"),
])
def test_multipart_rejections_write_nothing(server, parts, message):
    import json
    server.post(BASE, {"name": "m"})
    meta = json.dumps({"records": [rollout(0), rollout(1, payload_size=3)]}).encode()
    parts = [(n, meta if d is None else d) for n, d in parts]
    ctype, body = multipart(parts)
    r = server.request("POST", f"{BASE}/m/records?flush=true", body=body,
                       headers={"Content-Type": ctype})
    assert r.status == 400, r
    if message:
        assert r.error_message() == message
    assert server.get(f"{BASE}/m/records").json()["records"] == []


def test_blob_budget_refuses_with_retry_after(data_dir):
    s = Server(data_dir, args=["--max-inflight-blob-bytes", "1000"])
    try:
        s.post(BASE, {"name": "b"})
        # A lone oversized request is admitted when nothing else is in flight.
        big = b"x" * 5000
        r = s.post(f"{BASE}/b/records?flush=1",
                   {"records": [rollout(1, binary_payload=b64(big))]})
        assert r.status == 201, r
        assert s.get(f"{BASE}/b/records/r1/blob").body == big
        metrics = s.get("/metrics").body.decode()
        assert "strata_http_requests_total" in metrics
    finally:
        assert s.stop() == 0


def test_checkout_compact_and_stats(server):
    server.post(BASE, {"name": "c"})
    for i in range(3):
        server.post(f"{BASE}/c/records?flush=1", {"records": [rollout(i)]})
        assert server.post(f"/api/v1/internal/merge-wal/c").status == 200
    stats = server.get(f"{BASE}/c/stats").json()
    assert stats["rows"] == 3 and stats["pending_generations"] == 0, stats
    r = server.post(f"{BASE}/c/compact", {"target_rows_per_fragment": 1000})
    assert r.status == 200, r
    assert set(r.json()) == {"fragments_removed", "fragments_added", "files_removed", "files_added"}
    cs = server.get(f"{BASE}/c/compact/stats").json()
    assert cs["total_compactions"] == 1 and cs["is_compacting"] is False
    assert cs["last_compaction"] is not None and cs["last_error"] is None
    version = server.get(f"{BASE}/c").json()["version"]
    r = server.post(f"{BASE}/c/checkout", {"version": 1})
    assert r.status == 200 and r.json()["version"] == 1
    # A pinned handle reads the old version and refuses writes.
    assert server.get(f"{BASE}/c/records").json()["records"] == []
    r = server.post(f"{BASE}/c/records", {"records": [rollout(9)]})
    assert r.status == 400, r
    assert version > 1
