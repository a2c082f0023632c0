"""A guest's output as log records (host/events/guest_log.py): a line each, a Python
traceback whole (chained ones with it), componentize-py's panic as it traps dropped."""

from __future__ import annotations

from wkhost.events.guest_log import records

TRACEBACK = ('Traceback (most recent call last):\n'
             '  File "/1/wkguest/actor.py", line 190, in handle\n'
             '  File "/0/app.py", line 43, in handle\n'
             '    return 1 / 0\n'
             '           ~~^~~\n'
             'ZeroDivisionError: division by zero')
PANIC = ("\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1280:25:\n"
         "Python function threw an unexpected exception\n"
         "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")


def test_a_trapping_guests_output_is_its_traceback_alone() -> None:
    assert records("before\n" + TRACEBACK + "\n" + PANIC) == ["before", TRACEBACK]


def test_lines_around_a_traceback_stay_lines() -> None:
    got = records("one\n\ntwo\n" + TRACEBACK + "\nafter\n")
    assert got == ["one", "", "two", TRACEBACK, "after"]


def test_a_chained_traceback_is_one_record() -> None:
    chained = (TRACEBACK + "\n\nDuring handling of the above exception, another exception "
               "occurred:\n\n" + TRACEBACK.replace("ZeroDivisionError: division by zero",
                                                   "KeyError: 'x'"))
    assert records(chained + "\nnext\n") == [chained, "next"]


def test_a_panic_line_without_its_note_drops_that_line_only() -> None:
    head = "thread '<unnamed>' panicked at runtime/src/lib.rs:9:1:"
    assert records(f"{head}\nmine\n") == ["mine"]
    # The same words elsewhere in a line are the guest's own.
    assert records(f"said: {head}\n") == [f"said: {head}"]


def test_a_traceback_cut_short_keeps_what_there_is() -> None:
    assert records("Traceback (most recent call last):\n  File \"x\"") == [
        'Traceback (most recent call last):\n  File "x"']
