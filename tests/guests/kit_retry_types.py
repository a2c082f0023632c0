"""Retries by failure type (a step's `retry_on` and `no_retry_on`), for
tests/testkit/test_kit_retry_types.py. Each step counts its attempts in the instance's
own table `tries`:
    flaky     raises ConnectionError twice, then returns: retry_on=ConnectionError
    wrong     raises ValueError: retry_on=(ConnectionError, TimeoutError): fails at once
    refused   raises PermissionError: no_retry_on=PermissionError: fails at once
Output: each step's [ok, value, error, attempts] (wf.try_step's StepResult).
"""

from __future__ import annotations

from typing import Any

from wkguest import sqlite, workflow


def _tried(name: str) -> int:
    sqlite.exec("CREATE TABLE IF NOT EXISTS tries (name TEXT PRIMARY KEY, n INTEGER)")
    sqlite.exec("INSERT INTO tries VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET n = n + 1",
                (name,))
    return int(sqlite.exec("SELECT n FROM tries WHERE name = ?", (name,)).scalar())


def flaky() -> Any:
    if _tried("flaky") <= 2:
        raise ConnectionError("the bank is busy")
    return "paid"


def wrong() -> Any:
    _tried("wrong")
    raise ValueError("the card number is malformed")


def refused() -> Any:
    _tried("refused")
    raise PermissionError("the card is blocked")


def retry_types(wf: workflow.Run, inp: Any) -> Any:
    results = [wf.try_step("flaky", flaky, retry_on=ConnectionError, backoff_ms=1000),
               wf.try_step("wrong", wrong, retry_on=(ConnectionError, TimeoutError)),
               wf.try_step("refused", refused, no_retry_on=PermissionError)]
    return [[r.ok, r.value, r.error, r.attempts] for r in results]


Handler = workflow.serve(retry_types)
