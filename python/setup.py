"""Packages strata's Python module for pip: the files of python/strata/ and the compiled
extension strata._strata, which the project's own CMake build makes (src/python).

The extension is taken from the CMake build directory in STRATA_BUILD_DIR (default:
build/release of this repository, configured with the release preset when it does not exist
yet); its strata_python target is built first, which does nothing when it is up to date. Run
through pip, from the repository root:

    pip install --no-build-isolation ./python

No file is written into the source tree: setuptools' own build files go under the CMake
build directory.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cmake_build_dir() -> Path:
    return Path(os.environ.get("STRATA_BUILD_DIR", ROOT / "build" / "release")).resolve()


def project_version() -> str:
    match = re.search(r"project\(strata VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if match is None:
        raise SystemExit("setup.py: no `project(strata VERSION ...)` in CMakeLists.txt")
    return match.group(1)


class BuildWithCMake(build_py):
    """build_py, then the extension from the CMake build, copied beside the package."""

    def run(self) -> None:
        super().run()
        build_dir = cmake_build_dir()
        if not (build_dir / "CMakeCache.txt").exists():
            if "STRATA_BUILD_DIR" in os.environ:
                raise SystemExit(f"setup.py: {build_dir} is not a configured CMake build tree")
            subprocess.check_call(["cmake", "--preset", "release"], cwd=ROOT)
        subprocess.check_call(
            ["cmake", "--build", str(build_dir), "--target", "strata_python"], cwd=ROOT
        )
        built = sorted((build_dir / "python" / "strata").glob("_strata*.so"))
        if len(built) != 1:
            raise SystemExit(f"setup.py: expected one _strata*.so in {build_dir}, found {built}")
        target = Path(self.build_lib) / "strata"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target / built[0].name)


class BinaryDistribution(Distribution):
    """The wheel holds a compiled extension: tag it for this interpreter and platform."""

    def has_ext_modules(self) -> bool:
        return True


setup_dir = cmake_build_dir() / "python-setup"
setup_dir.mkdir(parents=True, exist_ok=True)
setup(
    version=project_version(),
    packages=["strata"],
    package_data={"strata": ["py.typed", "*.pyi"]},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": str(setup_dir / "build")},
             "egg_info": {"egg_base": str(setup_dir)}},
)
