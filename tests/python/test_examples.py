"""The example programs under examples/python/ run and end with "ok"."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


# Each example and what it leaves in DIR (remote_rollouts.py runs against a server in
# test_remote_examples.py).
STORES = {
    "context_store.py": ["bundles", "memory", "replica"],
    "datagen_store.py": ["datagen"],
    "generic_store.py": ["documents"],
    "rollout_store.py": ["rollouts"],
}


@pytest.mark.parametrize("name", sorted(STORES))
def test_example_runs(name, tmp_path):
    # The child inherits PYTHONPATH (the build tree's package) and, in the sanitizer build,
    # LD_PRELOAD and ASAN_OPTIONS.
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("ok"), result.stdout
    assert sorted(os.listdir(tmp_path)) == STORES[name]


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted([*STORES, "remote_rollouts.py"])
