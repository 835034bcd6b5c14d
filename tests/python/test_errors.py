"""The exception classes: lance-context's hierarchy, the HTTP API's codes, and the mapping
from the engine's status codes."""

import pytest

import strata
from strata import errors


def test_hierarchy_matches_the_reference():
    assert issubclass(errors.ContextStoreError, RuntimeError)
    for cls in (errors.NotFoundError, errors.AlreadyExistsError, errors.InvalidRequestError,
                errors.InternalError, errors.CompactionInProgressError):
        assert issubclass(cls, errors.ContextStoreError)
    # Bad input is also a ValueError, as lance-context raises it for empty adds and schemas.
    assert issubclass(errors.InvalidRequestError, ValueError)
    # Engine failures the reference has no class for are InternalErrors, as the HTTP API
    # reports them (500, or 503 for the retryable ones).
    for cls in (errors.FencedError, errors.BusyError, errors.UnavailableError):
        assert issubclass(cls, errors.InternalError)
    assert set(errors.__all__) <= set(strata.__all__)


def test_codes_and_retryability():
    assert errors.NotFoundError.code == "NOT_FOUND"
    assert errors.AlreadyExistsError.code == "ALREADY_EXISTS"
    assert errors.InvalidRequestError.code == "INVALID_REQUEST"
    assert errors.InternalError.code == "INTERNAL"
    assert errors.CompactionInProgressError.code == "COMPACTION_IN_PROGRESS"
    assert errors.UnavailableError.code == errors.BusyError.code == "OVERLOADED"
    retryable = {c.__name__ for c in vars(errors).values()
                 if isinstance(c, type) and issubclass(c, Exception) and c.retryable}
    assert retryable == {"InternalError", "CompactionInProgressError", "BusyError",
                         "UnavailableError"}


def test_engine_errors_carry_their_status(tmp_path):
    with pytest.raises(errors.NotFoundError) as raised:
        strata.GenericStore.open_existing(str(tmp_path / "none"))
    assert raised.value.status == "NotFound"
    with pytest.raises(errors.InvalidRequestError) as raised:
        strata.RolloutStore.open("s3://bucket/key")
    assert raised.value.status == "InvalidArgument"
    # Raised by the Python layer: no engine status.
    with pytest.raises(errors.InvalidRequestError) as raised:
        strata.RolloutStore.open(str(tmp_path / "r")).checkout(-1)
    assert raised.value.status is None


def test_corrupt_files_are_internal_errors_naming_the_problem(tmp_path):
    uri = tmp_path / "store"
    store = strata.RolloutStore.open(str(uri))
    store.add({"id": "a", "rollout_id": "r"})
    store.close()
    # Damage every manifest of the base table: opening it must fail loudly, never hand back
    # wrong data.
    manifests = [p for p in uri.rglob("*") if p.is_file() and "manifest" in p.name]
    assert manifests
    for p in manifests:
        p.write_bytes(b"\x00garbage" * 8)
    with pytest.raises(errors.ContextStoreError) as raised:
        strata.RolloutStore.open(str(uri)).list()
    assert isinstance(raised.value, errors.InternalError)
    assert raised.value.status in {"Corruption", "IOError"}
    assert str(raised.value).startswith(raised.value.status + ": ")
