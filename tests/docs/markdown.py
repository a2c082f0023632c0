"""A document's transcripts, read from its markdown (the convention is in __init__.py).

    doc = read_document(Path("README.md"))
    for block in doc.blocks: ...          # in the document's order: Transcript | FileBlock
    doc.skipped                           # the ```console blocks marked not to be run

Raises TranscriptError for a block the convention cannot read: a fence whose first line
is a `$ ` command but that is neither ```console nor marked, a marker that names nothing
it knows, or a `file` marker not followed by a fenced block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!--\s*transcript:\s*(?P<what>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+)(?P<lang>\S*)\s*$")
UNTIL = re.compile(r"^until (?P<s>\d+) s$")
PROMPT = "$ "


class TranscriptError(Exception):
    """The markdown breaks the transcript convention."""


@dataclass
class Command:
    """One `$ ` command (its `\\` continuations joined) and the lines shown beneath it."""

    text: str
    expected: list[str]
    line: int  # in the document, for messages


@dataclass
class Transcript:
    """A ```console block to run. `until_s`: repeat its first command until that
    command's output matches, for at most this long (the document says it waited)."""

    commands: list[Command]
    line: int
    until_s: float | None = None


@dataclass
class FileBlock:
    """A fenced block the document says is a file (`<!-- transcript: file NAME -->`)."""

    name: str
    text: str
    line: int


@dataclass
class Skipped:
    line: int
    reason: str


@dataclass
class Document:
    path: Path
    blocks: list[Transcript | FileBlock] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def transcripts(self) -> list[Transcript]:
        return [b for b in self.blocks if isinstance(b, Transcript)]


def read_document(path: Path) -> Document:
    doc = Document(path)
    lines = path.read_text().splitlines()
    marker: tuple[str, int] | None = None
    i = 0
    while i < len(lines):
        if m := MARKER.match(lines[i]):
            marker = (m["what"], i + 1)
            i += 1
            continue
        if (f := FENCE.match(lines[i])) is None:
            if lines[i].strip():
                _no_dangling(marker, path)
                marker = None
            i += 1
            continue
        end = _fence_end(lines, i, f["fence"], path)
        _add_block(doc, f["lang"], lines[i + 1:end], i + 1, marker)
        marker, i = None, end + 1
    _no_dangling(marker, path)
    return doc


def _fence_end(lines: list[str], start: int, fence: str, path: Path) -> int:
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == fence:
            return j
    raise TranscriptError(f"{path}:{start + 1}: a fenced block that never closes")


def _no_dangling(marker: tuple[str, int] | None, path: Path) -> None:
    if marker is not None:
        raise TranscriptError(f"{path}:{marker[1]}: a transcript marker with no fenced block "
                              "after it")


def _add_block(doc: Document, lang: str, body: list[str], line: int,
               marker: tuple[str, int] | None) -> None:
    what = marker[0] if marker else ""
    where = f"{doc.path}:{line}"
    if what.startswith("file "):
        doc.blocks.append(FileBlock(what.removeprefix("file ").strip(), "\n".join(body) + "\n",
                                    line))
        return
    if what.startswith("skip"):
        reason = what.removeprefix("skip").strip(" :-") or "(no reason given)"
        doc.skipped.append(Skipped(line, reason))
        return
    looks_run = bool(body) and body[0].startswith(PROMPT)
    if lang != "console":
        if looks_run:
            raise TranscriptError(f"{where}: a ```{lang} block of `$ ` commands: make it "
                                  "```console (run) or mark it <!-- transcript: skip REASON -->")
        if what:
            raise TranscriptError(f"{where}: marker {what!r} on a ```{lang} block")
        return
    until = UNTIL.match(what)
    if what and until is None:
        raise TranscriptError(f"{where}: unknown transcript marker {what!r}")
    doc.blocks.append(Transcript(_commands(body, line, where), line,
                                 float(until["s"]) if until else None))


def _commands(body: list[str], line: int, where: str) -> list[Command]:
    if not body or not body[0].startswith(PROMPT):
        raise TranscriptError(f"{where}: a ```console block must start with a `$ ` command")
    commands: list[Command] = []
    k = 0
    while k < len(body):
        first = k
        text = body[k][len(PROMPT):]
        while text.endswith("\\") and k + 1 < len(body):
            k += 1
            text = text[:-1].rstrip() + " " + body[k].strip()
        k += 1
        expected: list[str] = []
        while k < len(body) and not body[k].startswith(PROMPT):
            expected.append(body[k])
            k += 1
        commands.append(Command(text, expected, line + 1 + first))
    return commands
