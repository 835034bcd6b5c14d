"""Generic and datagen routes (shared/reference/lance-context.md §4.2, §6.7) over a real
server."""

from conftest import Server, b64

GEN = "/api/v1/generic"
DG = "/api/v1/datagen"

SCHEMA = {"columns": [["id", {"type": "string", "nullable": False}],
                      ["score", {"type": "float32"}],
                      ["video", {"type": "binary", "blob": True}],
                      ["tags", {"type": "list", "item": {"type": "string"}}]]}


def test_generic_round_trip(server):
    r = server.post(GEN, {"name": "g", "schema": SCHEMA, "seal_on_add": True})
    assert r.status == 201, r
    assert r.json()["schema"]["columns"][0][0] == "id"
    assert server.post(GEN, {"name": "g", "schema": SCHEMA}).status == 409
    r = server.post(f"{GEN}/g/rows", {"rows": [
        {"id": "a", "score": 1.5, "video": b64(b"vid"), "tags": ["x"]}, {"id": "b", "score": 2}]})
    assert r.status == 201 and r.json()["count"] == 2, r
    assert [s["name"] for s in server.get(GEN).json()["stores"]] == ["g"]
    info = server.get(f"{GEN}/g").json()
    assert info["name"] == "g" and "version" in info and "schema" in info
    rows = server.get(f"{GEN}/g/rows").json()["rows"]
    assert [r["id"] for r in rows] == ["a", "b"] and "video" not in rows[0]
    rows = server.get(f"{GEN}/g/rows", query={"filter": "score > 1.6"}).json()["rows"]
    assert [r["id"] for r in rows] == ["b"]
    row = server.get(f"{GEN}/g/rows/a").json()
    assert row["score"] == 1.5 and "video" not in row
    row = server.get(f"{GEN}/g/rows/a", query={"columns": "id,video"}).json()
    assert row == {"id": "a", "video": b64(b"vid")}
    r = server.get(f"{GEN}/g/rows/zz")
    assert r.status == 404 and r.error_message() == "Row 'zz' does not exist"
    got = server.post(f"{GEN}/g/get-rows", {"ids": ["b", "zz", "a", "b"]}).json()["rows"]
    assert [r["id"] for r in got] == ["b", "a"]
    got = server.post(f"{GEN}/g/get-rows", {"ids": ["a"], "columns": []}).json()["rows"]
    assert got == [{"id": "a"}]
    r = server.post(f"{GEN}/g/get-rows", {"ids": [str(i) for i in range(1025)]})
    assert r.status == 400


def test_generic_errors_register_nothing(server):
    bad = {"columns": [["score", {"type": "float32"}]]}  # no id column
    r = server.post(GEN, {"name": "bad", "schema": bad})
    assert r.status == 400, r
    assert server.get(GEN).json()["stores"] == []
    assert server.get(f"{GEN}/bad").status == 404
    assert server.get(f"{GEN}/bad").error_message() == "Generic store 'bad' does not exist"
    server.post(GEN, {"name": "g", "schema": SCHEMA})
    r = server.post(f"{GEN}/g/rows", {"rows": [{"id": "a", "nope": 1}]})
    assert r.status == 400 and "not declared" in r.error_message(), r
    r = server.post(f"{GEN}/g/rows", {"rows": [{"id": "a", "score": "high"}]})
    assert r.status == 400


def test_generic_deferred_rows_need_a_flush(data_dir):
    s = Server(data_dir, args=["--flush-interval", "3600"])
    try:
        s.post(GEN, {"name": "g", "schema": SCHEMA})
        s.post(f"{GEN}/g/rows", {"rows": [{"id": "a"}]})
        assert s.get(f"{GEN}/g/rows").json()["rows"] == []
        assert s.post(f"{GEN}/g/flush").status == 204
        assert [r["id"] for r in s.get(f"{GEN}/g/rows").json()["rows"]] == ["a"]
        assert s.post(f"{GEN}/g/merge-wal").json()["reclaimed"] >= 1
        assert [r["id"] for r in s.get(f"{GEN}/g/rows").json()["rows"]] == ["a"]
    finally:
        assert s.stop() == 0


def event(item, seq, etype, **extra):
    e = {"event_id": f"{item}-{seq}", "item_id": item, "root_item_id": item.split("/")[0],
         "item_seq": seq, "checkpoint_id": f"{item}-cp{seq}", "event_type": etype,
         "run_id": "run1", "writer_epoch": "1", "schema_version": 1}
    e.update(extra)
    return e


def test_datagen_routes(server):
    assert server.post(DG, {"name": "d"}).status == 201
    assert server.post(DG, {"name": "d"}).status == 409
    events = [event("root1", 1, "ITEM_CREATED"),
              event("root1", 2, "FIELD_SET", field_name="answer", field_type="str", codec_version=1,
              step_name="gen", step_kind="leaf", step_index=0,
                    value={"kind": "str", "value": "42"}),
              event("root1", 3, "FIELD_SET", field_name="image", field_type="blob", codec_version=1,
              step_name="gen", step_kind="leaf", step_index=0,
                    value={"kind": "blob", "bytes": b64(b"png!")})]
    r = server.post(f"{DG}/d/events", {"events": events})
    assert r.status == 201 and r.json()["count"] == 3, r
    item = server.get(f"{DG}/d/items/root1").json()["item"]
    assert item["item_id"] == "root1" and item["status"] == "running"
    assert server.get(f"{DG}/d/items/nope").json() == {"item": None}
    statuses = server.get(f"{DG}/d/root-status", query={"ids": "root1,never"}).json()
    assert statuses == {"statuses": {"root1": "running"}}
    raw = server.get(f"{DG}/d/roots/root1/events").json()["events"]
    assert [e["item_seq"] for e in raw] == [1, 2, 3]
    assert server.get(f"{DG}/d/blobs/root1-3").body == b"png!"
    r = server.get(f"{DG}/d/blobs/root1-2")
    assert r.status == 404 and r.error_message() == "Datagen event 'root1-2' has no blob"
    overview = server.get(f"{DG}/d/overview").json()
    assert overview["items"] == 1 and overview["running"] == 1, overview
    assert server.get(f"{DG}/d/items/root1/failures").json() == {"failures": []}
    r = server.post(f"{DG}/d/events", {"events": []})
    assert r.status == 400 and r.error_message() == "events array must not be empty"
    r = server.post(f"{DG}/d/events", {"events": [event("root2", 1, "NOT_A_TYPE")]})
    assert r.status == 400
    assert server.request("DELETE", f"{DG}/d").status == 204
    r = server.get(f"{DG}/d")
    assert r.status == 404 and r.error_message() == "Datagen store 'd' does not exist"
