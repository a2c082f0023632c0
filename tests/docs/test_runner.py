"""The transcript runner fails on what it must fail on: output that differs, a command
that fails, a server line that never comes, a warning the document does not show; and
takes what varies (times, UUIDs) by its shape. Plain shell commands, no wasm: seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown import TranscriptError, read_document
from tests.docs.matching import compare
from tests.docs.runner import run_document


def _run(tmp_path: Path, markdown: str) -> str | None:
    doc = tmp_path / "doc.md"
    doc.write_text(markdown)
    return run_document(read_document(doc))


def _console(*lines: str) -> str:
    return "```console\n" + "\n".join(lines) + "\n```\n"


def test_a_transcript_that_prints_what_it_shows_passes(tmp_path: Path) -> None:
    assert _run(tmp_path, _console("$ echo hello", "hello", "$ false; echo $?", "1")) is None


def test_output_that_differs_fails(tmp_path: Path) -> None:
    problem = _run(tmp_path, _console("$ echo hello", "goodbye"))
    assert problem is not None and "goodbye" in problem and "hello" in problem


def test_a_command_that_fails_fails_even_with_its_output_shown(tmp_path: Path) -> None:
    problem = _run(tmp_path, _console("$ echo oops; false", "oops"))
    assert problem is not None and "exited 1" in problem


def test_output_the_document_leaves_out_fails_unless_it_says_so(tmp_path: Path) -> None:
    assert _run(tmp_path, _console("$ printf 'a\\nb\\n'", "a")) is not None
    assert _run(tmp_path, _console("$ printf 'a\\nb\\nc\\n'", "a", "...")) is None
    assert _run(tmp_path, _console("$ echo 'took 3 ms'", "took ... ms")) is None


def test_a_uuid_shown_stands_for_the_one_printed_later_on(tmp_path: Path) -> None:
    shown = "34ddf92d-1dd6-40e6-89db-1324a8e3baa6"
    make = "$ python3 -c 'import uuid; print(uuid.uuid4())' | tee id"
    assert _run(tmp_path, _console(make, shown, f"$ echo {shown}", shown)) is None
    # the later command gets the run's UUID: the file holds it, not the document's
    assert _run(tmp_path, _console(make, shown, f"$ grep -c {shown} id", "1")) is None
    other = "00000000-1dd6-40e6-89db-1324a8e3baa6"
    assert _run(tmp_path, _console(make, shown, f"$ echo {other}", shown)) is not None


def test_times_and_durations_are_compared_by_their_shape() -> None:
    shown = ["ts=2026-12-01T19:04:54.717Z built in 9.9 s (18.6 MB), fuel 299,700"]
    ran = ["ts=2027-01-02T03:04:05.006Z built in 12.0 s (19.1 MB), fuel 1,206,531"]
    assert compare(shown, ran, {}) is None
    assert compare(shown, [ran[0].replace("built", "failed")], {}) is not None


def test_a_background_job_is_waited_for_and_its_lines_checked(tmp_path: Path) -> None:
    job = "$ (sleep 0.5; echo ready; sleep 60) &"
    assert _run(tmp_path, _console(job, "ready", "$ echo next", "next")) is None


def test_a_warning_the_server_logged_that_the_document_does_not_show_fails(
        tmp_path: Path) -> None:
    job = "$ (echo 'ts=2026-12-01T19:04:54.717Z level=warning logger=x msg=\"boom\"'; sleep 60) &"
    problem = _run(tmp_path, _console(job, "$ sleep 0.5"))
    assert problem is not None and "boom" in problem


def test_a_file_block_is_written_before_the_commands_after_it(tmp_path: Path) -> None:
    markdown = ("<!-- transcript: file hello.py -->\n```python\nprint('hi')\n```\n\n"
                + _console("$ python3 hello.py", "hi"))
    assert _run(tmp_path, markdown) is None


def test_a_block_of_commands_that_is_neither_run_nor_skipped_is_refused(
        tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```\n$ echo hello\nhello\n```\n")
    with pytest.raises(TranscriptError, match="console"):
        read_document(doc)
    doc.write_text("<!-- transcript: skip an excerpt -->\n```\n$ echo hello\n```\n")
    assert read_document(doc).skipped[0].reason == "an excerpt"
