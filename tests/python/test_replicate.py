"""strata.replicate: mark, export, apply and verify from Python, with typed refusals."""

import os

import pytest

import strata
from strata import replicate


def add(uri, first, n):
    with strata.RolloutStore.open(uri) as s:
        s.add([{"id": f"r{i}", "rollout_id": "t", "content": f"c{i}"} for i in range(first, first + n)])


def ids(uri):
    with strata.RolloutStore.open(uri) as s:
        return sorted(r["id"] for r in s.list())


def bundle_files(directory):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".bundle"))


def test_full_then_incremental_round_trip(tmp_path):
    src, out, replica = (str(tmp_path / n) for n in ("src", "bundles", "replica"))
    add(src, 0, 5)
    base = replicate.mark_base(src, "nightly")
    assert base["store_kind"] == "rollout" and base["base"]["cursor"] == 0
    with pytest.raises(strata.AlreadyExistsError):
        replicate.mark_base(src, "nightly")
    full = replicate.export_changes(src, out, full=True)
    assert full["rows"] == 5 and len(full["bundles"]) == 1
    report = replicate.apply_changes(replica, out)
    assert report["rows"] == 5 and len(report["applied"]) == 1
    assert ids(replica) == ids(src)
    assert replicate.verify(replica)["matches"]

    add(src, 5, 3)
    delta = replicate.export_changes(src, str(tmp_path / "delta"), max_rows=2)
    assert delta["rows"] == 3 and len(delta["bundles"]) == 2  # split by max_rows
    files = bundle_files(str(tmp_path / "delta"))
    with pytest.raises(replicate.CursorRefusedError) as refused:
        replicate.apply_changes(replica, files[1])  # part 2 before part 1
    assert refused.value.kind == "Cursor" and isinstance(refused.value, strata.ContextStoreError)
    assert ids(replica) == [f"r{i}" for i in range(5)]  # nothing installed
    for f in files:
        replicate.apply_changes(replica, f)
    assert ids(replica) == ids(src)
    with pytest.raises(replicate.CursorRefusedError):
        replicate.apply_changes(replica, files[0])  # replayed
    assert replicate.verify(replica)["matches"]


def test_damaged_bundle_and_unmarked_source(tmp_path):
    src, out = str(tmp_path / "src"), str(tmp_path / "out")
    add(src, 0, 3)
    with pytest.raises(replicate.NotMarkedRefusedError):
        replicate.export_changes(src, out)
    replicate.mark_base(src, "t")
    replicate.export_changes(src, out, full=True)
    [path] = bundle_files(out)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x01
    with pytest.raises(replicate.DigestRefusedError):
        replicate.apply_changes(str(tmp_path / "replica"), bytes(data))
    assert not os.path.exists(str(tmp_path / "replica")) or ids(str(tmp_path / "replica")) == []


def test_memory_stores_and_keyed_bundles(memory_uri):
    src, out, replica = memory_uri + "-src", memory_uri + "-out", memory_uri + "-replica"
    add(src, 0, 4)
    replicate.mark_base(src, "t")
    replicate.export_changes(src, out, full=True, hmac_secret="s3cret")
    with pytest.raises(replicate.DigestRefusedError):
        replicate.apply_changes(replica, out)  # keyed bundles need the key
    replicate.apply_changes(replica, out, hmac_secret="s3cret")
    assert ids(replica) == ids(src)
    with pytest.raises(strata.NotFoundError):
        replicate.verify(memory_uri + "-none")
