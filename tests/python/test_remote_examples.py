"""The remote examples under examples/python/ run against a live server and print what
they claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import strata.remote

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(script, *args):
    env = dict(os.environ)
    # The strata package these tests import, for the child too.
    package_dir = str(Path(strata.remote.__file__).absolute().parents[1])  # not resolved: a link
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_dir, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=True).stdout


def test_remote_rollouts_example(strata_server):
    out = run_example("remote_rollouts.py", strata_server.base_url, "example")
    assert "workers: appended 12 rows" in out
    assert "blobs: ['trace of worker 0', 'trace of worker 1', 'trace of worker 2', " \
           "'trace of worker 3']" in out
    assert "learner: 4 rows of problem-0 under ckpt-1" in out
    assert "traj-0 #0 assistant: 'turn 0'" in out
    assert "traj-0 #2 artifact: None" in out
