"""RemoteClient: error bodies -> exception classes, connection failures, the resend on a
dropped keep-alive connection, timeouts, bearer tokens and base URLs."""

from __future__ import annotations

import json
import socket
import socketserver
import threading

import pytest

from strata import _http
from strata._http import RemoteClient, Response, error_from_response
from strata.errors import (
    AlreadyExistsError,
    BusyError,
    CompactionInProgressError,
    ContextStoreError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)
from strata.remote import RemoteRolloutStore
from strata_server import StrataServer


def error(status, code, message, headers=None):
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return error_from_response(Response(status, headers or {}, body), "GET", "/x")


@pytest.mark.parametrize("status,code,cls", [
    (404, "NOT_FOUND", NotFoundError),
    (409, "ALREADY_EXISTS", AlreadyExistsError),
    (400, "INVALID_REQUEST", InvalidRequestError),
    (413, "PAYLOAD_TOO_LARGE", InvalidRequestError),
    (405, "METHOD_NOT_ALLOWED", InvalidRequestError),
    (401, "UNAUTHORIZED", InvalidRequestError),
    (409, "COMPACTION_IN_PROGRESS", CompactionInProgressError),
    (408, "REQUEST_TIMEOUT", UnavailableError),
    (500, "INTERNAL", InternalError),
    (409, "REPLICATION_REFUSED", InvalidRequestError),
    (418, "SOMETHING_NEW", InvalidRequestError),
    (502, "SOMETHING_NEW", InternalError),
])
def test_error_codes_map_to_classes_with_the_servers_message(status, code, cls):
    e = error(status, code, f"the message of {code}")
    assert type(e) is cls
    assert isinstance(e, ContextStoreError) and isinstance(e, RuntimeError)
    assert str(e) == f"the message of {code}"
    assert e.code == code and e.http_status == status


def test_overloaded_is_unavailable_or_busy_by_message():
    refused = error(503, "OVERLOADED", "worker is draining", {"retry-after": "1"})
    assert type(refused) is UnavailableError and refused.retryable
    assert refused.retry_after == 1.0
    capped = error(503, "OVERLOADED", "shard default: 4097 pending WAL generations exceed ...")
    assert type(capped) is UnavailableError
    raced = error(503, "OVERLOADED",
                  "rollout rows disappeared while reading their page; retry the request")
    assert type(raced) is BusyError and raced.retryable


def test_an_error_body_that_is_not_the_servers():
    e = error_from_response(Response(502, {}, b"<html>Bad Gateway</html>"), "POST", "/api/v1/x")
    assert type(e) is InternalError
    assert "HTTP 502 from POST /api/v1/x" in str(e) and "Bad Gateway" in str(e)
    assert type(error_from_response(Response(503, {}, b""), "GET", "/")) is UnavailableError
    assert type(error_from_response(Response(404, {}, b"nope"), "GET", "/")) is NotFoundError


def test_base_urls():
    assert RemoteClient("127.0.0.1:3000").target("rollouts", "a/b") == "/api/v1/rollouts/a%2Fb"
    assert RemoteClient("http://h:1/").target("x") == "/api/v1/x"
    assert RemoteClient("http://h:1/api/v1").target("x") == "/api/v1/x"
    assert RemoteClient("http://h:1/proxy/").target("x", query={"a": "b c", "n": None,
                                                                "f": True}) \
        == "/proxy/api/v1/x?a=b%20c&f=true"
    with pytest.raises(InvalidRequestError, match="base_url"):
        RemoteClient("ftp://h/")
    with pytest.raises(TypeError):
        RemoteClient(3000)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_unavailable():
    store_url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(UnavailableError, match="connection refused"):
        RemoteRolloutStore.connect(store_url, "x")


def test_a_stopped_server_is_unavailable():
    server = StrataServer()
    store = RemoteRolloutStore.connect_or_create(server.base_url, "s")
    store.add({"rollout_id": "t"})
    assert server.stop() == 0
    with pytest.raises(UnavailableError):
        store.list()


class _CountingHandler(socketserver.BaseRequestHandler):
    """Answers `per_connection` requests on a connection (200, a JSON body naming the
    request's number) and then closes it, without announcing it (keep-alive headers)."""

    def handle(self):
        server = self.server
        with server.lock:
            server.connections += 1
        reader = self.request.makefile("rb")
        for _ in range(server.per_connection):
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = reader.readline()
                if not line:
                    return
                head += line
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
            if server.silent:
                server.release.wait(10)
                return
            with server.lock:
                server.requests += 1
                n = server.requests
            body = json.dumps({"request": n}).encode()
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, per_connection=1, silent=False):
        super().__init__(("127.0.0.1", 0), _CountingHandler)
        self.per_connection = per_connection
        self.silent = silent
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.release.set()
        self.shutdown()
        self.server_close()


@pytest.fixture
def one_shot_server():
    server = _Server(per_connection=1)
    yield server
    server.close()


def test_a_connection_the_server_closed_is_not_reused(one_shot_server):
    client = RemoteClient(one_shot_server.url)
    assert client.get_json("a") == {"request": 1}
    assert client.get_json("b") == {"request": 2}
    assert one_shot_server.connections == 2


def test_idempotent_requests_are_resent_once_on_a_dropped_connection(one_shot_server,
                                                                      monkeypatch):
    # Make the pool hand out the connection the server closed, as when the close races
    # the next request.
    monkeypatch.setattr(_http, "_looks_open", lambda conn: conn.sock is not None)
    client = RemoteClient(one_shot_server.url)
    assert client.get_json("a") == {"request": 1}
    assert client.get_json("b") == {"request": 2}  # resent on a new connection
    assert client.post_json("c", body={}, idempotent=True) == {"request": 3}
    # Not idempotent: not resent, and the error says the outcome is unknown.
    with pytest.raises(UnavailableError, match="may have applied"):
        client.post_json("d", body={})
    assert one_shot_server.requests == 3


def test_a_server_that_does_not_answer_times_out():
    server = _Server(silent=True)
    try:
        client = RemoteClient(server.url, timeout=0.3)
        with pytest.raises(UnavailableError, match="no answer within 0.3 s"):
            client.get_json("x")
    finally:
        server.close()


def test_connections_are_pooled_and_shared_by_threads(strata_server):
    client = RemoteClient(strata_server.base_url, pool_size=4)
    store = RemoteRolloutStore.connect_or_create(strata_server.base_url, "pool", client=client)
    barrier = threading.Barrier(8)
    failures = []

    def work(t):
        try:
            barrier.wait()
            for i in range(5):
                store.add({"id": f"{t}-{i}", "rollout_id": "r"})
        except Exception as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(client._idle) <= 4
    assert len(store.list()) == 40
    store.close()  # a passed-in client stays open
    assert RemoteRolloutStore.connect(strata_server.base_url, "pool", client=client).list()
    client.close()
    assert client._idle == []


def test_a_body_over_the_routes_limit_is_refused(strata_server):
    client = RemoteClient(strata_server.base_url)
    body = b"x" * (64 * 1024 * 1024 + 1)  # the default route limit is 64 MiB
    with pytest.raises(InvalidRequestError) as raised:
        client.request("POST", client.target("contexts"), body=body,
                       content_type="application/json")
    assert raised.value.code == "PAYLOAD_TOO_LARGE" and raised.value.http_status == 413
    assert "stores" in client.get_json("rollouts")  # the client still works


def test_bearer_token(monkeypatch):
    with StrataServer(token="s3cret") as server:
        with pytest.raises(InvalidRequestError) as raised:
            RemoteRolloutStore.connect_or_create(server.base_url, "t")
        assert raised.value.code == "UNAUTHORIZED" and raised.value.http_status == 401
        store = RemoteRolloutStore.connect_or_create(server.base_url, "t", token="s3cret")
        store.add({"id": "a", "rollout_id": "r"})
        monkeypatch.setenv("STRATA_AUTH_TOKEN", "s3cret")  # the default token
        assert RemoteRolloutStore.connect(server.base_url, "t").get("a")["id"] == "a"
        with pytest.raises(InvalidRequestError):
            RemoteRolloutStore.connect(server.base_url, "t", token="wrong")
