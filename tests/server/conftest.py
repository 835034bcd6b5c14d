"""Fixtures of the HTTP server tests: a real `strata serve` process on loopback (any free
port, a fresh data directory) and a small HTTP client over the standard library."""

import base64
import http.client
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.parse

import pytest

STRATA = os.environ.get("STRATA_BIN", "strata")


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error_code(self):
        return self.json()["error"]["code"]

    def error_message(self):
        return self.json()["error"]["message"]

    def __repr__(self):
        return f"Response({self.status}, {self.body[:300]!r})"


class Server:
    """A `strata serve` child process. `args` are extra command-line flags."""

    def __init__(self, data_dir, args=(), env=None, token=None):
        self.data_dir = data_dir
        self.token = token
        port_file = os.path.join(tempfile.mkdtemp(prefix="strata-port-"), "port")
        cmd = [STRATA, "serve", "--data-dir", data_dir, "--port", "0", "--port-file", port_file,
               "--no-access-log", *args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.log = open(os.path.join(os.path.dirname(port_file), "server.log"), "w+b")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        deadline = time.monotonic() + 60
        while not os.path.exists(port_file):
            if self.proc.poll() is not None:
                raise RuntimeError(f"strata serve exited {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"strata serve did not start: {self.output()}")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, query=None, token=None):
        if query:
            path += "?" + urllib.parse.urlencode(query)
        headers = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        tok = token if token is not None else self.token
        if tok:
            headers.setdefault("Authorization", f"Bearer {tok}")
        conn = self.connection()
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            return Response(r.status, dict(r.getheaders()), r.read())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body if body is not None else {}, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@pytest.fixture
def data_dir(tmp_path):
    return str(tmp_path / "data")


@pytest.fixture
def server(data_dir):
    s = Server(data_dir)
    yield s
    code = s.stop()
    assert code == 0, s.output()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def multipart(parts, boundary="strata-test-boundary"):
    """parts: list of (name or None, bytes). Returns (content_type, body)."""
    out = b""
    for name, data in parts:
        out += f"--{boundary}\r\n".encode()
        if name is not None:
            out += f'Content-Disposition: form-data; name="{name}"\r\n'.encode()
        else:
            out += b"Content-Disposition: form-data\r\n"
        out += b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", out
