"""The runtime's places an event takes and lends: a run slot (the gate), its thread's
place among the working ones during a long wait, an actor's place under --max-actors
(admission), and what a long guest statement lends meanwhile (the statement loan)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from .admission import Admission
from .run_gate import RunGate

# storage/watch.py's Loan, spelt out: runtime knows no storage.
StatementLoan = Callable[[], Callable[[], Callable[[], None]] | None]


@dataclass(frozen=True, slots=True)
class RunPlaces:
    gate: RunGate
    long_wait: Callable[[], AbstractContextManager[object]]
    admission: Admission
    statement_loan: StatementLoan
