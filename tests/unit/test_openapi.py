"""The OpenAPI document of wk-workflow/v1 (host/net/openapi.py) against the runner's
routes (wkguest.workflow.protocol): the same routes, the same methods, each POST with a
request body, each answer and refusal described, every $ref resolving."""

from __future__ import annotations

import json
from typing import Any

from wkguest.workflow.protocol import _ROUTES  # the runner's table of routes
from wkhost.net.openapi import document

PREFIX = "/{class}/{id}/wk-workflow/v1/"


def test_the_document_has_the_runners_routes_and_methods() -> None:
    paths = document()["paths"]
    assert {p.removeprefix(PREFIX) for p in paths} == set(_ROUTES)
    for route, methods in _ROUTES.items():
        ops = paths[PREFIX + route]
        assert {m for m in ops if m != "parameters"} == {m.lower() for m in methods.split()}


def test_each_operation_is_described() -> None:
    doc = document()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method == "parameters":
                continue
            assert op["summary"] and op["operationId"], (path, method)
            assert {"200", "default"} <= set(op["responses"]), (path, method)
            if method == "post":
                assert "application/json" in op["requestBody"]["content"], path
    ids = [op["operationId"] for ops in doc["paths"].values()
           for m, op in ops.items() if m != "parameters"]
    assert len(ids) == len(set(ids))


def test_every_ref_resolves_and_the_document_is_json() -> None:
    doc = json.loads(json.dumps(document()))
    assert doc["openapi"].startswith("3.1")

    def refs(v: Any) -> list[str]:
        if isinstance(v, dict):
            return [v["$ref"]] if "$ref" in v else [r for x in v.values() for r in refs(x)]
        return [r for x in v for r in refs(x)] if isinstance(v, list) else []

    for ref in refs(doc):
        node: Any = doc
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        assert isinstance(node, dict), ref
