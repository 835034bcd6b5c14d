"""Server behaviour around the routes: health, metrics, auth, unknown routes, body limits and
timeouts, drain on SIGTERM, several instances on one data directory."""

import http.client
import json
import os
import signal
import socket
import time

import pytest

from conftest import Server


def test_health_and_metrics(server):
    for path in ("/health", "/api/v1/health"):
        r = server.get(path)
        assert r.status == 200 and r.json() == {"status": "ok"}
    server.get("/api/v1/rollouts")
    metrics = server.get("/metrics")
    assert metrics.headers["Content-Type"].startswith("text/plain")
    text = metrics.body.decode()
    assert 'strata_http_requests_total{method="GET",route="/api/v1/rollouts",status="200"}' in text
    assert "strata_http_request_duration_seconds_bucket" in text
    assert "strata_maintenance_stores" in text


def test_unknown_route_and_method(server):
    r = server.get("/api/v1/nothing")
    assert r.status == 404 and r.error_code() == "NOT_FOUND"
    r = server.request("PATCH", "/api/v1/rollouts")
    assert r.status == 405


def test_auth_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    s = Server(str(tmp_path / "data"), args=["--auth-token-file", str(token_file)])
    try:
        assert s.get("/health").status == 200  # open
        r = s.get("/api/v1/rollouts")
        assert r.status == 401 and r.json()["error"]["message"] == "unauthorized"
        assert s.get("/api/v1/rollouts", token="wrong").status == 401
        assert s.get("/api/v1/rollouts", token="s3cre").status == 401
        assert s.get("/metrics").status == 401
        assert s.get("/api/v1/rollouts", token="s3cret").status == 200
    finally:
        assert s.stop() == 0


def raw_request(port, head: bytes, body_parts=(), pause=0.0, timeout=30):
    """Sends `head` then each body part after `pause` seconds; returns the response bytes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.sendall(head)
        for part in body_parts:
            time.sleep(pause)
            sock.sendall(part)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                header, _, rest = data.partition(b"\r\n\r\n")
                length = 0
                for line in header.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if len(rest) >= length:
                    break
        return data
    finally:
        sock.close()


def test_declared_body_over_the_limit_is_413_before_reading(server):
    server.post("/api/v1/rollouts", {"name": "big"})
    head = (b"POST /api/v1/rollouts/big/records HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n")
    resp = raw_request(server.port, head)
    assert resp.startswith(b"HTTP/1.1 413"), resp[:200]
    head = (b"POST /api/v1/datagen HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n")
    assert raw_request(server.port, head).startswith(b"HTTP/1.1 413")


def test_refused_upload_still_being_sent_reads_its_413(server):
    """A client that keeps sending the body of a refused upload still reads the 413: the
    server reads and drops what follows (up to 4 MiB, 2 s) instead of resetting the
    connection under the response."""
    server.post("/api/v1/rollouts", {"name": "big"})
    head = (b"POST /api/v1/rollouts/big/records HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n")
    for _ in range(3):
        resp = raw_request(server.port, head, [b"x" * (1 << 20)], pause=0.2)
        assert resp.startswith(b"HTTP/1.1 413"), resp[:200]


def test_stalled_body_gets_408_and_progressing_body_succeeds(tmp_path):
    s = Server(str(tmp_path / "data"), args=["--body-idle-timeout", "1"])
    try:
        s.post("/api/v1/rollouts", {"name": "t"})
        body = b'{"records": [{"id": "a", "rollout_id": "r"}]}'
        head = (b"POST /api/v1/rollouts/t/records?flush=1 HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        resp = raw_request(s.port, head, [body[:10]])
        assert resp.startswith(b"HTTP/1.1 408"), resp[:300]
        assert b"request body idle timeout" in resp
        assert s.get("/api/v1/rollouts/t/records/a").json()["record"] is None
        # Five pieces 0.4 s apart: 2 s in all, longer than the idle limit, never idle past it.
        pieces = [body[i:i + 10] for i in range(0, len(body), 10)]
        resp = raw_request(s.port, head, pieces, pause=0.4)
        assert resp.startswith(b"HTTP/1.1 201"), resp[:300]
        assert s.get("/api/v1/rollouts/t/records/a").json()["record"]["id"] == "a"
        assert "strata_http_request_body_timeouts_total 1" in s.get("/metrics").body.decode()
    finally:
        assert s.stop() == 0


def read_head(sock, data=b""):
    """Reads from `sock` until `data` holds a whole response head; returns (head, rest)."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def test_expect_100_continue_gets_an_interim_response_over_http_1_1_only(server):
    server.post("/api/v1/rollouts", {"name": "c"})
    body = b'{"records": [{"id": "a", "rollout_id": "r"}]}'
    head = (b"POST /api/v1/rollouts/c/records?flush=1 HTTP/1.1\r\nHost: x\r\n"
            b"Expect: 100-continue\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        sock.sendall(head)
        interim, rest = read_head(sock)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim
        sock.sendall(body)
        final, _ = read_head(sock, rest)
        assert final.startswith(b"HTTP/1.1 201"), final
    finally:
        sock.close()
    # An HTTP/1.0 client's expectation is ignored: the final response comes alone.
    body = body.replace(b'"a"', b'"b"')
    head = head.replace(b"HTTP/1.1", b"HTTP/1.0")  # the body's length is unchanged
    resp = raw_request(server.port, head + body)
    assert resp.startswith(b"HTTP/1.1 201"), resp[:300]
    assert b"100 Continue" not in resp
    ids = {r["id"] for r in server.get("/api/v1/rollouts/c/records").json()["records"]}
    assert ids == {"a", "b"}


def test_client_killed_mid_upload_writes_nothing(server):
    server.post("/api/v1/rollouts", {"name": "k"})
    body = b'{"records": [{"id": "a", "rollout_id": "r"}]}'
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"POST /api/v1/rollouts/k/records?flush=1 HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body[:-5])
    sock.close()
    # The next request on a fresh connection is answered after the broken one was dropped.
    assert server.get("/api/v1/rollouts/k/records").json()["records"] == []
    # Counted as the client's going away (499), not as a malformed request (400), once the
    # server has read the end of that connection.
    route = 'method="POST",route="/api/v1/rollouts/{name}/records"'
    deadline = time.monotonic() + 30
    while True:
        metrics = server.get("/metrics").body.decode()
        if "%s,status=" % route in metrics or time.monotonic() > deadline:
            break
    assert 'strata_http_requests_total{%s,status="499"} 1' % route in metrics, metrics
    assert 'strata_http_requests_total{%s,status="400"}' % route not in metrics


def test_sigterm_seals_deferred_rows(tmp_path):
    data = str(tmp_path / "data")
    s = Server(data, args=["--flush-interval", "3600"])
    s.post("/api/v1/rollouts", {"name": "d"})
    for i in range(20):
        r = s.post("/api/v1/rollouts/d/records", {"records": [{"id": f"r{i}", "rollout_id": "x"}]})
        assert r.status == 201
    assert s.get("/api/v1/rollouts/d/records").json()["records"] == []
    assert s.stop(signal.SIGTERM) == 0, s.output()
    assert "draining" in s.output()
    s2 = Server(data, args=["--flush-interval", "3600"])
    try:
        got = s2.get("/api/v1/rollouts/d/records").json()["records"]
        assert sorted(r["id"] for r in got) == sorted(f"r{i}" for i in range(20))
    finally:
        assert s2.stop(signal.SIGINT) == 0


def test_two_instances_write_disjoint_shards_of_one_store(tmp_path):
    data = str(tmp_path / "data")
    a = Server(data, args=["--instance-id", "a"])
    b = Server(data, args=["--instance-id", "b"])
    try:
        assert a.post("/api/v1/rollouts", {"name": "shared"}).status == 201
        assert b.post("/api/v1/rollouts", {"name": "shared"}).status == 409
        for i in range(10):
            assert a.post("/api/v1/rollouts/shared/records?flush=1",
                          {"records": [{"id": f"a{i}", "rollout_id": "x"}]}).status == 201
            assert b.post("/api/v1/rollouts/shared/records?flush=1",
                          {"records": [{"id": f"b{i}", "rollout_id": "x"}]}).status == 201
        for s in (a, b):
            got = s.get("/api/v1/rollouts/shared/records").json()["records"]
            assert len(got) == 20
        # Each merges its own shard; the other still reads everything.
        assert a.post("/api/v1/internal/merge-wal/shared").status == 200
        assert b.post("/api/v1/internal/merge-wal/shared").status == 200
        assert len(a.get("/api/v1/rollouts/shared/records").json()["records"]) == 20
        assert b.get("/api/v1/rollouts/shared/records/a3").json()["record"]["id"] == "a3"
    finally:
        assert a.stop() == 0 and b.stop() == 0


def test_environment_configures_the_server(tmp_path):
    data = str(tmp_path / "data")
    s = Server(data, env={"INSTANCE_ID": "from-env", "ROLLOUT_MAX_INFLIGHT_BLOB_BYTES": "10"})
    try:
        assert s.get("/health").status == 200
    finally:
        assert s.stop() == 0
    assert "instance 'from-env'" in s.output()
    bad = os.path.join(str(tmp_path), "bad")
    import subprocess
    from conftest import STRATA
    p = subprocess.run([STRATA, "serve", "--data-dir", bad, "--port", "0"],
                       env={**os.environ, "ROLLOUT_FLUSH_INTERVAL_SECS": "soon"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "ROLLOUT_FLUSH_INTERVAL_SECS='soon'" in p.stderr


def test_replication_between_two_servers(tmp_path):
    src = Server(str(tmp_path / "src"))
    dst = Server(str(tmp_path / "dst"))
    try:
        src.post("/api/v1/rollouts", {"name": "exp"})
        src.post("/api/v1/rollouts/exp/records?flush=1",
                 {"records": [{"id": f"r{i}", "rollout_id": "x"} for i in range(10)]})

        def ship(body):
            r = src.post("/api/v1/rollouts/exp/replicate/export", body)
            assert r.status == 200, r
            report = r.json()
            for b in report["bundles"]:
                data = src.get(f"/api/v1/rollouts/exp/replicate/bundles/{b['key']}").body
                assert len(data) == b["bytes"]
                a = dst.request("POST", "/api/v1/rollouts/exp/replicate/apply", body=data,
                                headers={"Content-Type": "application/octet-stream"})
                assert a.status == 200, a
            return report, data

        report, first = ship({"full": True, "consumer": "dst"})
        assert report["rows"] == 10
        got = dst.get("/api/v1/rollouts/exp/records").json()["records"]
        assert len(got) == 10
        src.post("/api/v1/rollouts/exp/records?flush=1",
                 {"records": [{"id": "r10", "rollout_id": "x"}]})
        report, _ = ship({"since": report["to"]["cursor"], "consumer": "dst"})
        assert report["rows"] == 1
        assert dst.get("/api/v1/rollouts/exp/records/r10").json()["record"]["id"] == "r10"
        # Replaying an old bundle is refused and changes nothing.
        r = dst.request("POST", "/api/v1/rollouts/exp/replicate/apply", body=first,
                        headers={"Content-Type": "application/octet-stream"})
        assert r.status == 409 and r.error_code() == "REPLICATION_REFUSED", r
        status = dst.get("/api/v1/rollouts/exp/replicate/status").json()
        assert status["replica"]["state"]["cursor"] == report["to"]["cursor"]
        assert src.get("/api/v1/rollouts/exp/replicate/status").json()["source"]["consumers"]
        # A replica refuses writes.
        r = dst.post("/api/v1/rollouts/exp/records", {"records": [{"id": "w", "rollout_id": "x"}]})
        assert r.status == 400, r
    finally:
        assert src.stop() == 0 and dst.stop() == 0


def test_sql_route(server):
    server.post("/api/v1/rollouts", {"name": "q"})
    recs = [{"id": f"r{i}", "rollout_id": f"t{i % 3}", "reward": i / 2} for i in range(30)]
    assert server.post("/api/v1/rollouts/q/records?flush=1", {"records": recs}).status == 201
    r = server.post("/api/v1/rollouts/q/sql", {
        "sql": "select rollout_id, count(*) as n from records group by rollout_id order by 1"})
    assert r.status == 200, r
    assert r.json() == {"columns": ["rollout_id", "n"],
                        "rows": [["t0", 10], ["t1", 10], ["t2", 10]],
                        "row_count": 3, "truncated": False}
    r = server.post("/api/v1/rollouts/q/sql",
                    {"sql": "WITH x AS (SELECT id FROM records) SELECT * FROM x", "max_rows": 7})
    assert r.json()["row_count"] == 7 and r.json()["truncated"] is True
    r = server.post("/api/v1/rollouts/q/sql", {
        "sql": "SELECT a.id FROM records a JOIN records b ON a.id = b.id WHERE a.reward > 14"})
    assert r.json()["rows"] == [["r29"]], r
    for bad in ("DELETE FROM records", "DROP TABLE records", "SELECT 1; SELECT 2",
                "ATTACH DATABASE 'x.db' AS x", "PRAGMA table_info(records)",
                "INSERT INTO records(id) VALUES ('z')"):
        r = server.post("/api/v1/rollouts/q/sql", {"sql": bad})
        assert r.status == 400 and r.error_code() == "INVALID_REQUEST", (bad, r)
    assert server.post("/api/v1/rollouts/nope/sql", {"sql": "SELECT 1"}).status == 404


def test_sql_large_result_is_sent_chunked(server):
    """A result past 256 KiB is sent chunked as SQLite produces it; the connection stays usable,
    and a query failing after the first chunk ends the connection with the body truncated. To
    an HTTP/1.0 client (no chunked encoding) the body ends when the connection closes."""
    server.post("/api/v1/rollouts", {"name": "big"})
    numbers = ("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 50000) ")
    conn = server.connection()
    try:
        body = json.dumps({"sql": numbers + "SELECT x, printf('%040d', x) AS pad FROM n",
                           "max_rows": 60000})
        conn.request("POST", "/api/v1/rollouts/big/sql", body=body,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200
        assert r.getheader("Transfer-Encoding") == "chunked"
        assert r.getheader("Content-Length") is None
        result = json.loads(r.read())
        assert result["columns"] == ["x", "pad"]
        assert result["row_count"] == 50000 and result["truncated"] is False
        assert result["rows"][0] == [1, "0" * 39 + "1"] and result["rows"][-1][0] == 50000
        # The same connection serves the next request (the chunked body was complete).
        conn.request("POST", "/api/v1/rollouts/big/sql", body=json.dumps({"sql": "SELECT 7"}),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("Content-Length") is not None
        assert json.loads(r.read())["rows"] == [[7]]
    finally:
        conn.close()
    # A small result failing is an ordinary error response ...
    r = server.post("/api/v1/rollouts/big/sql", {"sql": "SELECT json('not json')"})
    assert r.status == 400, r
    # ... a large one failing after its first chunks cannot be: the body ends short.
    conn = server.connection()
    try:
        body = json.dumps({"sql": numbers + "SELECT x, CASE WHEN x < 40000 THEN "
                           "printf('%040d', x) ELSE json('not json') END FROM n",
                           "max_rows": 60000})
        conn.request("POST", "/api/v1/rollouts/big/sql", body=body,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("Transfer-Encoding") == "chunked"
        with pytest.raises(http.client.IncompleteRead):
            r.read()
    finally:
        conn.close()
    assert server.get("/health").status == 200
    # HTTP/1.0 has no chunked encoding: the large result's body ends with the connection.
    body = json.dumps({"sql": numbers + "SELECT x, printf('%040d', x) AS pad FROM n",
                       "max_rows": 60000}).encode()
    head = (b"POST /api/v1/rollouts/big/sql HTTP/1.0\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    try:
        sock.sendall(head + body)
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    finally:
        sock.close()
    header, _, payload = data.partition(b"\r\n\r\n")
    assert header.startswith(b"HTTP/1.1 200"), header
    assert b"transfer-encoding" not in header.lower() and b"content-length" not in header.lower()
    result = json.loads(payload)
    assert result["row_count"] == 50000 and result["rows"][-1][0] == 50000


def test_drain_finishes_an_upload_already_admitted(tmp_path):
    data = str(tmp_path / "data")
    s = Server(data)
    s.post("/api/v1/rollouts", {"name": "u"})
    body = b'{"records": [{"id": "late", "rollout_id": "r"}]}'
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    sock.sendall(b"POST /api/v1/rollouts/u/records?flush=1 HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body[:10])
    time.sleep(0.3)  # the header is admitted before the drain begins
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    # New requests are refused while the admitted upload is still being read...
    assert raw_request(s.port, b"GET /api/v1/rollouts HTTP/1.1\r\nHost: x\r\n\r\n") \
        .startswith(b"HTTP/1.1 503")
    sock.sendall(body[10:])
    resp = b""
    while b"\r\n\r\n" not in resp:
        chunk = sock.recv(65536)
        if not chunk:
            break
        resp += chunk
    sock.close()
    # ...and it is answered and applied before the server exits.
    assert resp.startswith(b"HTTP/1.1 201"), resp[:200]
    assert s.proc.wait(timeout=60) == 0, s.output()
    s2 = Server(data)
    try:
        assert s2.get("/api/v1/rollouts/u/records/late").json()["record"]["id"] == "late"
    finally:
        assert s2.stop() == 0


def test_blob_budget_requires_a_length(tmp_path):
    s = Server(str(tmp_path / "data"), args=["--max-inflight-blob-bytes", "1000"])
    try:
        s.post("/api/v1/rollouts", {"name": "b"})
        head = (b"POST /api/v1/rollouts/b/records HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        assert raw_request(s.port, head).startswith(b"HTTP/1.1 411")
    finally:
        assert s.stop() == 0
