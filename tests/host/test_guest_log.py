"""A guest's records in the host's log (WIT `log`, host/interfaces/log.py), from the
probe guest's /say: at the level it gives, with its fields beside the actor's; every
string bounded, no field passing for the host's own or logging's, and the records of
one event sharing its output cap with what it prints."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from wkhost.errors import GuestFailed
from wkhost.interfaces import log as guest_log

from .support import Probe


def said(probe: Probe, caplog: pytest.LogCaptureFixture, actor_id: str,
         **body: Any) -> list[logging.LogRecord]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="wkhost.guest.probe"):
        probe.json(actor_id, "POST", "/say", body)
    return [r for r in caplog.records if r.name == "wkhost.guest.probe"]


def test_a_record_has_its_level_message_and_fields_beside_the_actors(
        probe: Probe, caplog: pytest.LogCaptureFixture) -> None:
    (r,) = said(probe, caplog, "a", level="warning", message="refund refused",
                fields={"order": "o-17", "attempt": 2})
    assert (r.levelno, r.getMessage()) == (logging.WARNING, "[probe/a] refund refused")
    fields = r.__dict__
    assert (fields["class"], fields["id"], fields["event"]) == ("probe", "a", "request")
    assert (fields["order"], fields["attempt"]) == ("o-17", "2")


def test_no_field_passes_for_the_hosts_or_loggings_own(
        probe: Probe, caplog: pytest.LogCaptureFixture) -> None:
    hostile = {"class": "x", "id": "y", "event": "z", "msg": "m", "name": "n",
               "levelno": "0", "exc_info": "e", "a b=c\nd": "v"}
    (r,) = said(probe, caplog, "h", message="hi", fields=hostile)
    f = r.__dict__
    assert (f["class"], f["id"], f["event"]) == ("probe", "h", "request")
    assert r.name == "wkhost.guest.probe" and r.levelno == logging.INFO
    assert (f["class_"], f["id_"], f["event_"], f["msg_"], f["name_"], f["levelno_"],
            f["exc_info_"]) == ("x", "y", "z", "m", "n", "0", "e")
    assert f["a_b_c_d"] == "v"


def test_every_string_is_bounded(make_probe: Any, caplog: pytest.LogCaptureFixture) -> None:
    probe = make_probe(max_guest_output_bytes=1 << 20)  # the record fits: its bounds apply
    fields = {f"k{i}": "v" * 5000 for i in range(40)}
    fields["n" * 500] = "x"
    (r,) = said(probe, caplog, "b", message="m" * 10_000, fields=fields,
                level="error")
    assert len(r.getMessage()) == len("[probe/b] ") + guest_log.MAX_MESSAGE
    mine = {k: v for k, v in r.__dict__.items() if k.startswith("k") and k[1:].isdigit()}
    assert len(mine) == guest_log.MAX_FIELDS
    assert all(len(v) == guest_log.MAX_VALUE for v in mine.values())
    assert "n" * guest_log.MAX_NAME not in r.__dict__  # the 41st field: past the bound


def test_records_past_the_events_output_cap_are_dropped_and_counted(
        make_probe: Any, caplog: pytest.LogCaptureFixture) -> None:
    probe = make_probe(max_guest_output_bytes=2000)
    got = said(probe, caplog, "f", message="x" * 100, times=50)
    kept = [r for r in got if r.getMessage().endswith("x" * 100)]
    assert len(kept) == 20, len(kept)  # 2,000 bytes hold 20 of 100
    dropped = [r for r in got if "more bytes of output dropped" in r.getMessage()]
    assert len(dropped) == 1, [r.getMessage() for r in got]
    # The next event has its own cap.
    assert len(said(probe, caplog, "f", message="again")) == 1


def test_a_level_the_wit_does_not_have_is_the_guests_error(probe: Probe) -> None:
    with pytest.raises(GuestFailed, match="the guest raised ValueError: level must be one"):
        probe.send("l", "POST", "/say", b'{"message": "m", "level": "fatal"}')
