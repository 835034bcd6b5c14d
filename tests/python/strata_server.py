"""A `strata serve` child process for the Python tests: a fresh data directory, any free
loopback port (reported through --port-file), stopped with SIGTERM. Reusable outside pytest:

    with StrataServer() as server:
        store = RemoteRolloutStore.connect_or_create(server.base_url, "exp")
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def strata_binary() -> str:
    """$STRATA_BIN; else the `strata` of the build tree the tests run from
    ($STRATA_PYTHON_BUILD_DIR, which the ctest registration sets); else this checkout's
    debug build (build/debug/strata)."""
    if os.environ.get("STRATA_BIN"):
        return os.environ["STRATA_BIN"]
    build_dir = os.environ.get("STRATA_PYTHON_BUILD_DIR")
    if build_dir and os.path.exists(os.path.join(build_dir, "strata")):
        return os.path.join(build_dir, "strata")
    return str(REPO / "build" / "debug" / "strata")


class StrataServer:
    """Starts `strata serve` at construction; `stop()` (or leaving a `with` block) sends
    SIGTERM, waits for the drain and removes its working directory (port file, log and, unless
    `data_dir` was given, the data)."""

    def __init__(self, args=(), env=None, data_dir=None, token=None, start_timeout=120.0):
        self.workdir = tempfile.mkdtemp(prefix="strata-py-")
        self.data_dir = data_dir or os.path.join(self.workdir, "data")
        self.token = token
        port_file = os.path.join(self.workdir, "port")
        cmd = [strata_binary(), "serve", "--data-dir", self.data_dir, "--host", "127.0.0.1",
               "--port", "0", "--port-file", port_file, "--no-access-log", *args]
        full_env = dict(os.environ)
        full_env.pop("STRATA_AUTH_TOKEN", None)
        if token is not None:
            full_env["STRATA_AUTH_TOKEN"] = token
        full_env.update(env or {})
        self._log = open(os.path.join(self.workdir, "server.log"), "w+b")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=full_env)
        deadline = time.monotonic() + start_timeout
        # The port file is written once the server accepts connections.
        while not _nonempty(port_file):
            if self.proc.poll() is not None:
                raise RuntimeError(f"strata serve exited {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"strata serve did not start: {self.output()}")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())
        self.base_url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=120.0) -> int:
        """Stops the server and returns its exit status (0 after a clean drain)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        # The data directory too when it is the default one, inside workdir.
        shutil.rmtree(self.workdir, ignore_errors=True)
        return code

    def __enter__(self) -> StrataServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _nonempty(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False
