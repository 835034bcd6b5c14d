"""Fixtures of the Python module tests, which import `strata` from the build tree (PYTHONPATH,
set by the ctest registration in CMakeLists.txt): store locations (a fresh directory, a fresh
memory:// name), a `strata serve` per test module (fresh data directory, free
loopback port) and one fresh store per test, created through the class under test.

The store fixtures take a `backend` parameter: "remote" (a store of the module's server) and
"embedded" (the extension's class, opened under tmp_path; skipped while the extension or that
class is missing), so the same tests hold both paths to one behaviour.
"""

from __future__ import annotations

import importlib
import itertools
import os
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:  # the package PYTHONPATH names (a build tree), else this checkout's python/
    importlib.import_module("strata.remote")
except ImportError:
    sys.path.insert(0, str(HERE.parents[1] / "python"))

from strata_server import StrataServer  # noqa: E402

from strata.remote import (  # noqa: E402
    RemoteDatagenStore,
    RemoteGenericStore,
    RemoteRolloutStore,
    SyncRemoteContext,
)

# "embedded" runs the store fixtures on the extension's classes where they exist (skipped
# when the extension or the class is missing).
BACKENDS = ["remote", "embedded"]


def _embedded(name):
    """The embedded class `name` of the strata package, or a skip."""
    strata = importlib.import_module("strata")
    cls = getattr(strata, name, None)
    if cls is None:
        pytest.skip(f"strata.{name} (embedded) is not available")
    return cls


@pytest.fixture(scope="module")
def strata_server():
    server = StrataServer()
    yield server
    output = server.output()
    code = server.stop()
    assert code == 0, f"strata serve exited {code}:\n{output}"


@pytest.fixture
def base_url(strata_server) -> str:
    return strata_server.base_url


@pytest.fixture
def store_name(request) -> str:
    """A store name no other test of the module uses."""
    return f"{request.node.name[:60].strip('_')}-{uuid.uuid4().hex[:8]}".replace("[", "-") \
        .replace("]", "")


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def rollout_store(backend, request, store_name, tmp_path):
    if backend == "embedded":
        store = _embedded("RolloutStore").open(str(tmp_path / store_name))
    else:
        base_url = request.getfixturevalue("base_url")
        store = RemoteRolloutStore.connect_or_create(base_url, store_name)
    yield store
    store.close()


@pytest.fixture
def open_generic(backend, request, store_name, tmp_path):
    """open_generic(schema, seal_on_add=False, name=None): a generic store."""
    opened = []
    if backend == "embedded":
        cls = _embedded("GenericStore")
    else:
        base_url = request.getfixturevalue("base_url")

    def open_(schema, *, seal_on_add=False, name=None):
        if backend == "embedded":
            store = cls.open(str(tmp_path / (name or store_name)), schema,
                             seal_on_add=seal_on_add)
        else:
            store = RemoteGenericStore.connect_or_create(base_url, name or store_name, schema,
                                                         seal_on_add=seal_on_add)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def open_datagen(backend, request, store_name, tmp_path):
    """open_datagen(): a new handle of the test's datagen store (the server's store of that
    name, or the embedded store under tmp_path; a second embedded handle writes its own
    shard, as a second writer process must)."""
    opened = []
    if backend == "embedded":
        cls = _embedded("DatagenStore")
    else:
        base_url = request.getfixturevalue("base_url")

    def open_():
        if backend == "embedded":
            shard = {"shard_id": f"handle-{len(opened)}"} if opened else {}
            store = cls.open(str(tmp_path / store_name), **shard)
        else:
            store = RemoteDatagenStore.connect_or_create(base_url, store_name)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def datagen_store(open_datagen):
    """A fresh datagen store, remote and embedded (test_remote_datagen.py holds both to one
    behaviour)."""
    return open_datagen()


@pytest.fixture(params=["remote"])
def context(request, store_name, tmp_path):
    """A fresh remote context store with 3-dimensional embeddings (cosine). Remote only: the
    embedded Context's add returns None where RemoteContext's returns the record (as in the
    reference), so test_context.py holds the embedded class's behaviour."""
    backend = request.param
    if backend == "embedded":
        ctx = _embedded("Context")(str(tmp_path / store_name), embedding_dim=3,
                                   distance_metric="cosine")
    else:
        base_url = request.getfixturevalue("base_url")
        ctx = SyncRemoteContext.connect(base_url, store_name, embedding_dim=3,
                                        distance_metric="cosine")
    yield ctx
    ctx.close()


_names = itertools.count()


@pytest.fixture
def store_uri(tmp_path):
    """A path where no store exists yet."""
    return str(tmp_path / "store")


@pytest.fixture
def memory_uri():
    """A memory:// name no other test uses."""
    return f"memory://test-{os.getpid()}-{next(_names)}"


@pytest.fixture(params=["path", "memory"])
def any_uri(request, tmp_path):
    """Each test that takes it runs against a local directory and a memory store."""
    if request.param == "path":
        return str(tmp_path / "store")
    return f"memory://param-{os.getpid()}-{next(_names)}"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "embedded_only: the test needs what only the embedded class has (the HTTP "
        "API has no route or field for it); its remote variant is skipped")
