"""The kinds of journal entry (kinds.py): the stored letters, and the replay table over them."""

from __future__ import annotations

from wkguest.workflow.core import kinds
from wkguest.workflow.core.answers import REPLAY as _REPLAY


def test_the_stored_letters_are_the_formats() -> None:
    """The letters are in every `_wk_wf_step` row already written: they never change."""
    letters = {name: getattr(kinds, name) for name in (
        "STEP_RETURNED", "STEP_RETURNED_TAGGED", "STEP_FAILED", "SLEEP_PASSED",
        "WAIT_TOOK_EVENT", "WAIT_TOOK_EVENT_TAGGED", "WAIT_TIMED_OUT", "NOW_TAKEN",
        "RANDOM_TAKEN", "UUID_TAKEN", "PATCH_MARKER", "EMITTED", "STEP_RETRYING", "SLEEPING",
        "WAITING", "GROUP_SETTLED", "GROUP_OPEN", "UPDATE_APPLIED", "UPDATE_DONE")}
    assert "".join(letters.values()) == "STXZEFONRUVMpwqGgAD"
    assert set(kinds.KINDS) == set(letters.values())
    assert (kinds.FINAL_KINDS, kinds.PENDING_KINDS) == ("STXZEFONRUVMGAD", "pwqg")


def test_every_final_kind_replays_and_no_pending_one_does() -> None:
    assert set(_REPLAY) == set(kinds.FINAL_KINDS)


def test_an_unknown_kind_is_shown_as_itself() -> None:
    assert (kinds.call_of("?"), kinds.state_of("?")) == ("?", "?")
    assert (kinds.call_of("p"), kinds.state_of("p")) == ("step", "retrying")
