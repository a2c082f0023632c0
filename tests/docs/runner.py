"""Run a document's transcripts as a user would type them; say where the first one fails.

    failure = run_document(read_document(Path("docs/from-cloudflare.md")))   # None: all ran

The convention the documents follow is in __init__.py. What this adds to a user's
terminal, and why:

- a temporary directory, with the repository's `.venv`, `examples`, `tests`,
  `guest_sdk` and `wit` linked into it (the documents run from a checkout's top), a
  fresh `./wkdata`, and the venv's bin first on PATH (`wkhost` resolves with or without
  the document's `source .venv/bin/activate`);
- builds use the test suite's cache (WKHOST_CACHE_DIR=.cache/components), so a
  component built once, by the suite or here, is not built again; and `wkhost serve`
  without `--cache-dir` uses the suite's compile cache (.cache/compiled), so a class the
  suite's servers compiled is not compiled again (nor is the user's ~/.cache written);
- each port the document names (8080 by default) becomes a free one, the same
  everywhere in the document: in commands, in the output shown, and for `wkhost serve`
  without `--port` and clients without `--server` ($WKHOST_SERVER);
- a background job's output (`... &`) goes to a file of its own. The lines shown beneath
  `... &` are waited for before the next command, as a user waits for `listening on`;
  the server's log lines (`ts=...`) shown beneath a later command are waited for in
  that job's output, in their order, within a bound. A warning or an error the
  server logged that the document does not show fails the run;
- every command has a bound, and the session (its jobs with it) is killed at the end.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.markdown import Command, Document, FileBlock, Transcript
from tests.docs.matching import bind, cache_line, compare, match_line
from tests.docs.shell import Shell, ShellTimeout

REPO = Path(__file__).resolve().parents[2]
LINKED = (".venv", "examples", "tests", "guest_sdk", "wit")
DEFAULT_PORT = 8080
COMPILED = REPO / ".cache" / "compiled"  # the suite's compile cache: tests/e2e/server.py's
COMMAND_S = 180.0  # a cold build on a busy machine, a status --wait's default 60 s
LOG_WAIT_S = 300.0  # a first start compiles every class: a minute each on a busy machine
PORT = re.compile(r"(?:(?<=127\.0\.0\.1:)|(?<=localhost:)|(?<=--port ))(\d{2,5})\b")
BACKGROUND = re.compile(r"(?<![&|])&\s*(?:#.*)?$")
SERVE = re.compile(r"\bwkhost serve\b")
SERVER_LINE = re.compile(r"^(?:ts=\S+ level=|wkhost: listening on )")
# A job's end, as bash reports it before a later prompt (`[1]+  Done  wkhost serve ...`):
# when a terminal shows it is timing, and the documents leave it out.
# What a terminal shows as colour, not as text (jq colours its output on a terminal).
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
JOB_NOTICE = re.compile(r"^\[\d+\][+-]? +(?:Done|Terminated|Killed|Exit \d+)\b")
COMPLAINT = re.compile(r"^ts=\S+ level=(?:warning|error|critical)\b")


@dataclass
class _Job:
    log: Path
    read: int = 0  # lines of the log matched so far (the next match starts after)
    shown: set[int] = field(default_factory=set)  # lines the document shows


class _Run:
    def __init__(self, doc: Document, shell: Shell, logs: Path, ports: dict[str, str]) -> None:
        self.doc, self.shell, self.logs, self.ports = doc, shell, logs, ports
        self.bindings: dict[str, str] = {}
        self.jobs: list[_Job] = []

    def where(self, command: Command) -> str:
        return f"{self.doc.path.name}:{command.line}: $ {command.text}"

    def text(self, line: str) -> str:
        return bind(PORT.sub(lambda m: self.ports.get(m[1], m[1]), line), self.bindings)

    def command_text(self, command: Command) -> str:
        text = self.text(command.text)
        if SERVE.search(text) and "--cache-dir" not in text:
            text = SERVE.sub(f"wkhost serve --cache-dir {COMPILED}", text, 1)
        if SERVE.search(text) and "--port" not in text:
            text = SERVE.sub(f"wkhost serve --port {self.ports[str(DEFAULT_PORT)]}", text, 1)
        return text

    def run(self, command: Command) -> str | None:
        started = time.monotonic()
        try:
            return self._run(command)
        finally:
            # What each command took, printed with a failure's report (pytest -s shows it).
            print(f"{time.monotonic() - started:6.1f} s  {self.where(command)[:120]}",
                  file=sys.stderr)

    def _run(self, command: Command) -> str | None:
        text = self.command_text(command)
        expected = [self.text(line) for line in command.expected]
        if BACKGROUND.search(text):
            log = self.shell.start_background(BACKGROUND.sub("", text), self.logs)
            self.jobs.append(_Job(log))
            return self.await_lines(expected, self.jobs[-1:], command)
        try:
            status, output = self.shell.run(text, COMMAND_S)
        except ShellTimeout as e:
            return f"{self.where(command)}\n{e}"
        mine = [line for line in expected if not SERVER_LINE.match(line)]
        printed = [line for line in COLOUR.sub("", output).splitlines()
                   if not JOB_NOTICE.match(line)]
        problem = compare(mine, printed, self.bindings)
        if status != 0:
            problem = f"it exited {status}\n{problem or output}"
        if problem:
            return f"{self.where(command)}\n{problem}"
        return self.await_lines([x for x in expected if SERVER_LINE.match(x)], self.jobs, command)

    def await_lines(self, expected: list[str], jobs: list[_Job], command: Command) -> str | None:
        """Wait for each line of `expected` (bar a cache's) in the jobs' output, in order."""
        for want in (x for x in expected if not cache_line(x) and x.strip()):
            deadline = time.monotonic() + LOG_WAIT_S
            while not any(self.find(want, job) for job in reversed(jobs)):
                if time.monotonic() > deadline:
                    printed = "\n".join(f"  | {j.log.name}: {x}" for j in jobs for x in _lines(j))
                    return (f"{self.where(command)}\nno line like\n  | {want}\nin the "
                            f"background's output after {LOG_WAIT_S:.0f} s:\n{printed}")
                time.sleep(0.1)
        return None

    def find(self, want: str, job: _Job) -> bool:
        lines = _lines(job)
        for k in range(job.read, len(lines)):
            new = match_line(want, lines[k], self.bindings)
            if new is not None:
                self.bindings.update(new)
                job.read, job.shown = k + 1, job.shown | {k}
                return True
        return False

    def unshown_complaints(self) -> str | None:
        extra = [f"  | {j.log.name}: {line}" for j in self.jobs
                 for k, line in enumerate(_lines(j)) if k not in j.shown and COMPLAINT.match(line)]
        if not extra:
            return None
        return (f"{self.doc.path.name}: the server logged what the document does not show:\n"
                + "\n".join(extra))


def _lines(job: _Job) -> list[str]:
    try:
        text = job.log.read_text(errors="replace")
    except FileNotFoundError:
        return []
    # A line still being written is not a line yet.
    return text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]


def run_document(doc: Document) -> str | None:
    """Run every block of `doc` in order in one session: None, or the first failure."""
    with tempfile.TemporaryDirectory(prefix="wk-transcript-") as tmp:
        home = Path(tmp) / "run"
        home.mkdir()
        for name in LINKED:
            (home / name).symlink_to(REPO / name)
        logs = Path(tmp) / "jobs"
        logs.mkdir()
        ports = _free_ports(doc)
        env = _environment(ports[str(DEFAULT_PORT)])
        with Shell(home, env) as shell:
            run = _Run(doc, shell, logs, ports)
            for block in doc.blocks:
                problem = _run_block(run, block, home)
                if problem:
                    return problem
            return run.unshown_complaints()


def _run_block(run: _Run, block: Transcript | FileBlock, home: Path) -> str | None:
    if isinstance(block, FileBlock):
        (home / block.name).write_text(block.text)
        return None
    commands = block.commands
    if block.until_s is not None:
        problem = _until(run, commands[0], block.until_s)
        if problem:
            return problem
        commands = commands[1:]
    for command in commands:
        if problem := run.run(command):
            return problem
    return None


def _until(run: _Run, command: Command, until_s: float) -> str | None:
    """Run `command` again until its output matches (the document waited for it)."""
    deadline = time.monotonic() + until_s
    while (problem := run.run(command)) and time.monotonic() < deadline:
        time.sleep(3.0)  # a user looks again now and then, not in a loop
    return f"(repeated for {until_s:.0f} s) {problem}" if problem else None


def _free_ports(doc: Document) -> dict[str, str]:
    named = {str(DEFAULT_PORT)}
    for block in doc.transcripts:
        for command in block.commands:
            for line in [command.text, *command.expected]:
                named.update(PORT.findall(line))
    return {port: str(_free_port()) for port in sorted(named)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _environment(port: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WKHOST_")}
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["WKHOST_CACHE_DIR"] = str(REPO / ".cache" / "components")
    env["WKHOST_COMPILED_DIR"] = str(COMPILED)  # a test kit's sandbox serves with it too
    env["WKHOST_SERVER"] = f"http://127.0.0.1:{port}"
    env["PYTHONIOENCODING"] = "utf-8"
    env["TERM"] = "dumb"  # no colours, no cursor moves
    env.pop("VIRTUAL_ENV", None)
    return env
