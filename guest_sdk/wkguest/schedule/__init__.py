"""Schedules: cron-like starts of workflow instances, one actor per schedule.

    wkhost serve --actor reports=reports.wasm --access reports=internal --schedules
    wkhost schedule create nightly reports "0 3 * * *" --input '{"full": true}'

The schedule class ships with wkhost: `APP` (app.py) is its component's source, built
by `wkhost serve --schedules` with the build cache and served as the class `schedules`,
internal. Each schedule is one actor, fired by its alarm; each fire starts an instance
named after the schedule and the fire time ("nightly-2026-01-01T03:00Z"), with
`workflow.Client.start`, which is idempotent: a fire repeated after a crash finds its
instance there and never starts a second one.

Modules: `cron` (the specs and fixed time zones), `spec` (a schedule's definition and
its policies), `store` (its tables), `fire` (one fire: the plan and the starts),
`service` (the actor's routes, wk-schedule/v1), `app` (the component; imported only
by its build: it needs the bindings).
"""

from __future__ import annotations

from pathlib import Path

from .cron import Cron, CronError
from .spec import CATCHUPS, OVERLAPS, Spec, SpecError

APP: Path = Path(__file__).parent / "app.py"
CLASS = "schedules"

__all__ = ["APP", "CATCHUPS", "CLASS", "OVERLAPS", "Cron", "CronError", "Spec", "SpecError"]
