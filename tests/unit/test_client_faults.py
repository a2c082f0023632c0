"""host/logs.py's ClientFaults: a record about a client's fault (a malformed request, a
connection lost mid-request) is one line at info; anything else is kept as it is."""

from __future__ import annotations

import logging

import pytest
from wkhost.logs import ClientFaults


class Faulty(Exception):
    pass


def faults_logger(caplog: pytest.LogCaptureFixture) -> ClientFaults:
    caplog.set_level(logging.DEBUG, logger="test.faults")
    return ClientFaults(logging.getLogger("test.faults"), (Faulty, ConnectionError))


def test_a_clients_fault_is_one_line_at_info_without_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    log = faults_logger(caplog)
    try:
        raise Faulty("400, message:\n  Invalid character\n\n  b'ZZ'")
    except Faulty:
        log.exception("Error handling request from %s", "127.0.0.1")
    log.exception("Error handling request from %s", "x", exc_info=ConnectionResetError("gone"))
    assert [(r.levelno, r.getMessage(), r.exc_info) for r in caplog.records] == [
        (logging.INFO, "Error handling request from 127.0.0.1: Faulty: 400, message: "
                       "Invalid character b'ZZ'", None),
        (logging.INFO, "Error handling request from x: ConnectionResetError: gone", None)]


def test_a_debug_record_about_a_fault_stays_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    log = faults_logger(caplog)
    log.debug("Error handling request from %s", "x", exc_info=Faulty("bad method"))
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.DEBUG, None)]


def test_anything_else_keeps_its_level_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    log = faults_logger(caplog)
    try:
        raise KeyError("a bug of the host's")
    except KeyError:
        log.exception("Unhandled exception")
    log.warning("no exception at all: %d", 1)
    (bug, plain) = caplog.records
    assert bug.levelno == logging.ERROR and bug.exc_info is not None
    assert bug.getMessage() == "Unhandled exception"
    assert plain.levelno == logging.WARNING and plain.getMessage() == "no exception at all: 1"
