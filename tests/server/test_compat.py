"""Compatibility: replays request/response pairs written from the reference's documented DTOs
(shared/reference/lance-context.md §4.2, compat/exchanges.json) against one server and
compares status, shape and values. Placeholders: "<int>", "<number>", "<str>", "<timestamp>"
(RFC 3339), "<object>" (any object), "<list:N>" (a list of N items). Objects must have
exactly the expected keys."""

import json
import os
import re

from conftest import Server

HERE = os.path.dirname(os.path.abspath(__file__))
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def matches(expected, actual, path="body"):
    if isinstance(expected, str) and expected.startswith("<") and expected.endswith(">"):
        kind = expected[1:-1]
        if kind == "int":
            assert isinstance(actual, int) and not isinstance(actual, bool), (path, actual)
        elif kind == "number":
            assert isinstance(actual, (int, float)) and not isinstance(actual, bool), (path, actual)
        elif kind == "str":
            assert isinstance(actual, str), (path, actual)
        elif kind == "timestamp":
            assert isinstance(actual, str) and TIMESTAMP.match(actual), (path, actual)
        elif kind == "object":
            assert isinstance(actual, dict), (path, actual)
        elif kind.startswith("list:"):
            assert isinstance(actual, list) and len(actual) == int(kind[5:]), (path, actual)
        else:
            raise AssertionError(f"unknown placeholder {expected}")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), (path, actual)
        assert set(actual) == set(expected), (path, sorted(set(actual) ^ set(expected)))
        for k, v in expected.items():
            matches(v, actual[k], f"{path}.{k}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (path, actual)
        for i, (e, a) in enumerate(zip(expected, actual)):
            matches(e, a, f"{path}[{i}]")
        return
    assert expected == actual, (path, expected, actual)


def test_reference_exchanges(tmp_path):
    with open(os.path.join(HERE, "compat", "exchanges.json")) as f:
        exchanges = json.load(f)
    s = Server(str(tmp_path / "data"))
    try:
        for x in exchanges:
            method, path, *body = x["request"]
            r = s.request(method, path, body=body[0] if body else None)
            assert r.status == x["status"], (x["note"], r)
            if x["body"] is None:
                assert r.body == b"", (x["note"], r)
            else:
                matches(x["body"], r.json(), x["note"])
    finally:
        assert s.stop() == 0
