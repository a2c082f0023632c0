"""The schedule class's component: `wkhost serve --schedules` builds this app (with the
build cache, as any app) and serves it as the class `schedules`, internal."""

from __future__ import annotations

from wkguest.actor import Actor, export
from wkguest.schedule.service import Schedules
from wkguest.types import Request, Response
from wkguest.workflow.real_backend import RealBackend

# Made at import, at build time: it imports the bindings (see RealBackend's doc).
_BACKEND = RealBackend()


class ScheduleActor(Actor):
    """One schedule as an actor: its routes, its init and its alarm (service.py)."""

    def __init__(self) -> None:
        self.schedules = Schedules(_BACKEND)

    def on_init(self) -> None:
        self.schedules.init()

    def on_alarm(self) -> None:
        self.schedules.on_alarm()

    def handle(self, req: Request) -> Response:
        out = self.schedules.handle(req.method, req.path, req.body, req.sender.kind)
        return Response(out.status, out.headers, out.body)


Handler = export(ScheduleActor)
