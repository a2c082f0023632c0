"""The crash-point harness's judgement and report: what one run did, the rules it is
judged by against the run no kill cut short, and the report of them all, as text for a
person and as JSON for a program.

The rules (docs/testing-workflows.md, "Crash points"):
- the instance ends (an instance that rests short of its end with nothing to bring it
  on is stuck), in the clean run's state, with its output and error;
- each step's function ran as often as in the clean run; one extra run is allowed for one
  step the kill fell inside (in flight at the kill: steps are at-least-once), never for
  another; a run fewer is an effect lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class StepKey(NamedTuple):
    pos: int
    branch: int | None  # a group's branch, by its index
    name: str

    def text(self) -> str:
        return f"{self.pos}{'' if self.branch is None else f'.{self.branch}'} {self.name}"


@dataclass(frozen=True)
class Boundary:
    point: str  # a crash point (host/testing/crashpoints.py)
    skip: int  # its hits to let pass first: 0 is its first
    what: str

    def text(self) -> str:
        return f"{self.point}#{self.skip + 1}"


@dataclass
class RunResult:
    boundary: Boundary | None  # None: the clean run
    killed: bool = False
    at: str = ""  # where the kill left the instance
    in_flight: set[int] = field(default_factory=set)
    state: str = ""
    output: Any = None
    error: str | None = None
    runs: dict[StepKey, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    at_least_once: StepKey | None = None  # the step that ran once more, as allowed
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        b = self.boundary
        head = f"{'ok' if self.ok else 'FAILED':6} {b.text() if b else 'clean':32}"
        tail = ("; ".join(self.problems) if self.problems else
                f"{self.at}" + (f"; {self.at_least_once.text()} ran once more "
                                "(at-least-once)" if self.at_least_once else ""))
        return f"{head} {tail}  ({self.seconds:.1f} s)"

    def doc(self) -> dict[str, Any]:
        b = self.boundary
        return {"point": b.point if b else None, "skip": b.skip if b else None,
                "what": b.what if b else "the run without a kill", "ok": self.ok,
                "killed": self.killed, "at": self.at, "state": self.state,
                "output": self.output, "error": self.error,
                "runs": {k.text(): n for k, n in sorted(self.runs.items())},
                "at_least_once": self.at_least_once.text() if self.at_least_once else None,
                "problems": self.problems, "seconds": round(self.seconds, 3)}


def verdict(clean: RunResult, run: RunResult) -> RunResult:
    """`run` judged against `clean` (the rules in the module's doc): its problems."""
    if run.problems:
        return run  # it did not end, or could not be read: nothing more to compare
    if not run.killed:
        run.problems.append("the kill never came: this run did not reach the boundary "
                            "(is the workflow deterministic?)")
    if (run.state, run.error) != (clean.state, clean.error):
        run.problems.append(f"it ended {run.state} with {_short(run.output, run.error)}; "
                            f"the clean run ended {clean.state} with "
                            f"{_short(clean.output, clean.error)}")
    elif run.output != clean.output:
        run.problems.append(f"its output differs: {_difference(run.output, clean.output)}")
    extra = []
    for key in sorted(set(clean.runs) | set(run.runs)):
        was, now = clean.runs.get(key, 0), run.runs.get(key, 0)
        if now < was:
            run.problems.append(f"step {key.text()} ran {now}×, {was}× in the clean run: "
                                "an effect lost")
        elif now > was:
            extra.append((key, now - was))
    if len(extra) == 1 and extra[0][1] == 1 and extra[0][0].pos in run.in_flight:
        run.at_least_once = extra[0][0]
    else:
        for key, more in extra:
            inside = " (the kill fell inside it)" if key.pos in run.in_flight else ""
            run.problems.append(f"step {key.text()} ran {more}× more than in the clean "
                                f"run{inside}")
    return run


def _difference(got: Any, clean: Any) -> str:
    """Where two outputs differ: each differing key of two objects, else the whole."""
    if isinstance(got, dict) and isinstance(clean, dict):
        return "; ".join(f"{json.dumps(k)}: {_json(got.get(k))} (clean run: "
                         f"{_json(clean.get(k))})" for k in sorted(set(got) | set(clean))
                         if got.get(k) != clean.get(k) or (k in got) != (k in clean))
    return f"{_json(got)} (clean run: {_json(clean)})"


def _json(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _short(output: Any, error: str | None) -> str:
    text = f"error {error!r}" if error else f"output {json.dumps(output, default=str)}"
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass
class Report:
    cls: str
    input: Any
    clean: RunResult
    runs: list[RunResult]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    @property
    def failed(self) -> list[RunResult]:
        return [r for r in self.runs if not r.ok]

    def text(self) -> str:
        steps = ", ".join(f"{k.text()} ×{n}" for k, n in sorted(self.clean.runs.items()))
        lines = [f"crash points of {self.cls}: {len(self.runs)} boundaries, "
                 f"{len(self.runs) - len(self.failed)} passed, {len(self.failed)} failed "
                 f"({self.seconds:.1f} s)",
                 f"clean run: {self.clean.state} with "
                 f"{_short(self.clean.output, self.clean.error)}",
                 f"  steps' runs: {steps or 'none'}"]
        lines += [r.line() for r in self.runs]
        return "\n".join(lines)

    def doc(self) -> dict[str, Any]:
        return {"class": self.cls, "input": self.input, "ok": self.ok,
                "boundaries": len(self.runs), "failed": len(self.failed),
                "seconds": round(self.seconds, 3), "clean": self.clean.doc(),
                "runs": [r.doc() for r in self.runs]}
