"""Load and faults on loopback: many concurrent keep-alive connections mixing writes and
reads, then SIGTERM and SIGKILL of the server under write load. Every acknowledged write must
be readable afterwards. STRATA_LOAD_SECONDS (default 60; 600 with STRATA_STRESS=1) and
STRATA_LOAD_CONNECTIONS (default 1000) size the mixed run; its figures go to
$STRATA_LOAD_REPORT when set."""

import asyncio
import json
import os
import random
import resource
import signal
import time

from conftest import Server

SECONDS = float(os.environ.get("STRATA_LOAD_SECONDS",
                               "600" if os.environ.get("STRATA_STRESS") == "1" else "60"))
CONNECTIONS = int(os.environ.get("STRATA_LOAD_CONNECTIONS", "1000"))


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None

    async def request(self, method, path, body=None):
        if self.writer is None:
            try:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                return None, None
        data = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
                f"Content-Type: application/json\r\n\r\n").encode()
        try:
            self.writer.write(head + data)
            await self.writer.drain()
            header = await self.reader.readuntil(b"\r\n\r\n")
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            self.close()
            return None, None
        lines = header.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        length, close = 0, False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
            elif k.strip().lower() == b"connection" and v.strip().lower() == b"close":
                close = True
        try:
            payload = await self.reader.readexactly(length)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.close()
            return None, None
        if close:
            self.close()
        return status, payload

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def rss_peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def setup_stores(server):
    assert server.post("/api/v1/rollouts", {"name": "load"}).status == 201
    assert server.post("/api/v1/contexts", {"name": "mem", "embedding_dim": 8}).status == 201


def all_rollout_ids(server):
    assert server.post("/api/v1/internal/merge-wal/load").status == 200
    r = server.get("/api/v1/rollouts/load/records")
    assert r.status == 200, r
    return {rec["id"] for rec in r.json()["records"]}


async def mixed_client(port, n, deadline, acked, stats):
    conn = Conn(port)
    rng = random.Random(n)
    seq = 0
    mine = []
    while time.monotonic() < deadline:
        op = rng.random()
        if op < 0.4:
            rid = f"c{n}-{seq}"
            seq += 1
            flush = "?flush=true" if rng.random() < 0.1 else ""
            status, _ = await conn.request(
                "POST", f"/api/v1/rollouts/load/records{flush}",
                {"records": [{"id": rid, "rollout_id": f"t{n}", "content": "x" * 200}]})
            kind = "rollout_add"
            if status == 201:
                acked["rollouts"].add(rid)
                mine.append(rid)
        elif op < 0.55:
            vec = [rng.random() for _ in range(8)]
            status, body = await conn.request(
                "POST", "/api/v1/contexts/mem/records",
                {"records": [{"text_payload": f"note {n} {seq}", "embedding": vec}]})
            kind = "context_add"
            if status == 201:
                acked["contexts"].update(json.loads(body)["ids"])
        elif op < 0.75:
            rid = rng.choice(mine) if mine else "none"
            status, _ = await conn.request("GET", f"/api/v1/rollouts/load/records/{rid}")
            kind = "rollout_get"
        elif op < 0.85:
            status, _ = await conn.request("GET", "/api/v1/rollouts/load/records?limit=10")
            kind = "rollout_list"
        else:
            vec = [rng.random() for _ in range(8)]
            status, _ = await conn.request("POST", "/api/v1/contexts/mem/search",
                                           {"query": vec, "limit": 5})
            kind = "context_search"
        key = f"{kind}:{status}"
        stats[key] = stats.get(key, 0) + 1
    conn.close()


def test_load_mixed_connections(tmp_path):
    raise_fd_limit()
    # The count trigger keeps pending generations (and so read costs) bounded under load.
    s = Server(str(tmp_path / "data"),
               args=["--flush-interval", "2", "--merge-after-generations", "8"])
    try:
        setup_stores(s)
        acked = {"rollouts": set(), "contexts": set()}
        stats = {}

        async def run():
            deadline = time.monotonic() + SECONDS
            await asyncio.gather(*(mixed_client(s.port, n, deadline, acked, stats)
                                   for n in range(CONNECTIONS)))

        start = time.monotonic()
        asyncio.run(run())
        elapsed = time.monotonic() - start
        failures = {k: v for k, v in stats.items()
                    if not (k.endswith(":200") or k.endswith(":201") or k.endswith(":503"))}
        assert not failures, (failures, s.output()[-3000:])
        assert acked["rollouts"] and acked["contexts"]
        missing = acked["rollouts"] - all_rollout_ids(s)
        assert not missing, f"{len(missing)} acknowledged rollouts lost"
        contexts = s.get("/api/v1/contexts/mem/records").json()["records"]
        lost = acked["contexts"] - {r["id"] for r in contexts}
        assert not lost, f"{len(lost)} acknowledged context records lost"
        peak = rss_peak_kib(s.proc.pid)
        requests = sum(stats.values())
        report = {"connections": CONNECTIONS, "seconds": round(elapsed, 1), "requests": requests,
                  "requests_per_second": round(requests / elapsed, 1),
                  "acked_rollouts": len(acked["rollouts"]),
                  "acked_contexts": len(acked["contexts"]), "server_rss_peak_mib": peak // 1024,
                  "by_op_status": stats}
        print(json.dumps(report))
        if os.environ.get("STRATA_LOAD_REPORT"):
            with open(os.environ["STRATA_LOAD_REPORT"], "w") as f:
                json.dump(report, f, indent=1)
        # Bounded: the server holds connections and handles, not the data it was sent.
        assert peak < 4 * 1024 * 1024, report
    finally:
        assert s.stop() == 0, s.output()[-3000:]


async def writer_client(port, n, stop_event, acked):
    conn = Conn(port)
    seq = 0
    while not stop_event.is_set():
        rid = f"w{n}-{seq}"
        seq += 1
        status, _ = await conn.request("POST", "/api/v1/rollouts/load/records",
                                       {"records": [{"id": rid, "rollout_id": "t"}]})
        if status == 201:
            acked.add(rid)
        elif status is None:
            await asyncio.sleep(0.05)  # the server is going away: back off, try again
            if stop_event.is_set():
                break
    conn.close()


def kill_under_load(tmp_path, sig):
    raise_fd_limit()
    data = str(tmp_path / "data")
    s = Server(data, args=["--flush-interval", "3600"])
    setup_stores(s)
    acked = set()

    async def run():
        stop_event = asyncio.Event()
        clients = [asyncio.create_task(writer_client(s.port, n, stop_event, acked))
                   for n in range(64)]
        # Signal once writes are flowing, keep writing through the shutdown.
        while len(acked) < 500:
            await asyncio.sleep(0.01)
        s.proc.send_signal(sig)
        await asyncio.get_running_loop().run_in_executor(None, s.proc.wait)
        stop_event.set()
        await asyncio.gather(*clients)

    asyncio.run(run())
    code = s.proc.wait()
    if sig == signal.SIGTERM:
        assert code == 0, s.output()[-3000:]
    s2 = Server(data, args=["--flush-interval", "3600"])
    try:
        missing = acked - all_rollout_ids(s2)
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged rollouts lost"
    finally:
        assert s2.stop() == 0
    return len(acked)


def test_load_sigterm_loses_no_acknowledged_write(tmp_path):
    assert kill_under_load(tmp_path, signal.SIGTERM) >= 500


def test_load_sigkill_loses_no_acknowledged_write(tmp_path):
    assert kill_under_load(tmp_path, signal.SIGKILL) >= 500
