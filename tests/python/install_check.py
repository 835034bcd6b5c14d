"""`pip install --no-build-isolation ./python` works offline and installs an importable
package. Run by ctest as python.install (not with the module's suite: it builds in the build
tree, so it holds the build tree's lock)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_pip_installs_the_package_offline(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the installed package, not the build tree's, is imported
    env["STRATA_BUILD_DIR"] = os.environ["STRATA_PYTHON_BUILD_DIR"]
    env["PIP_NO_INPUT"] = "1"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
         "--no-build-isolation", "--no-deps", "--no-index", "--target", str(site),
         str(ROOT / "python")],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    installed = {p.name for p in (site / "strata").iterdir()}
    assert {"__init__.py", "errors.py", "rollout.py", "generic.py", "py.typed",
            "_strata.pyi"} <= installed
    assert any(name.startswith("_strata") and name.endswith(".so") for name in installed)

    env["PYTHONPATH"] = str(site)
    check = (
        "import strata\n"
        "print(strata.__file__)\n"
        "s = strata.RolloutStore.open('memory://installed')\n"
        "s.add({'id': 'a', 'rollout_id': 'r'})\n"
        "s.flush()\n"
        "assert [r['id'] for r in s.list()] == ['a']\n"
        "print(strata.__version__)\n"
    )
    run = subprocess.run([sys.executable, "-c", check], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    where, version = run.stdout.split()
    assert where == str(site / "strata" / "__init__.py")
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert version == cmake.split("project(strata VERSION ")[1].split()[0]
    # Nothing was written into the source tree.
    assert not (ROOT / "python" / "build").exists()
    assert not list((ROOT / "python").glob("*.egg-info"))
