"""`serve`: a workflow function as an actor class.

    # app.py, built with `wkhost build app.py -o orders.wasm`
    from wkguest import workflow

    def order(wf: workflow.Run, input):
        ...

    Handler = workflow.serve(order, workflow.Config(retention_ms=86_400_000))

Serve it with `--access orders=internal`: the runner refuses the public anyway (403).
"""

from __future__ import annotations

from typing import Any

from .core.config import Config
from .protocol import HOLD_STATE, Protocol
from .real_backend import RealBackend
from .runner import Runner, Workflow
from .start_keys import HEADER as IDEMPOTENCY_KEY
from .status import PROTOCOL as PROTOCOL  # what the class declares (status.py)


def serve(fn: Workflow, config: Config | None = None) -> type[Any]:
    """Build the actor class that runs `fn` and export it for componentize-py.

    Call it at module level: it imports the bindings then, at build time (a module first
    imported while an event runs is not found).
    """
    from wkguest.actor import Actor, export
    from wkguest.types import Request, Response

    backend = RealBackend()  # stateless: one per instance, made at import (see its doc)
    cfg = config or Config()

    class WorkflowActor(Actor):
        """The workflow class's actor: its alarm runs the instance, its requests are the
        protocol's routes."""

        # A runner per actor object, so its warm journal never outlives its actor, even
        # in an instance that the host reuses for the next one.
        def __init__(self) -> None:
            self.runner = Runner(fn, cfg, backend)
            self.protocol = Protocol(self.runner)

        def on_init(self) -> None:
            self.runner.init()

        def on_alarm(self) -> None:
            self.runner.on_alarm()

        def handle(self, req: Request) -> Response:
            out = self.protocol.handle(req.method, req.path, req.body, req.sender.kind,
                                       req.header(HOLD_STATE), req.header(IDEMPOTENCY_KEY))
            return Response(out.status, out.headers, out.body)

    WorkflowActor.__name__ = WorkflowActor.__qualname__ = f"Workflow_{fn.__name__}"
    handler = export(WorkflowActor)
    handler.wk_workflow = (fn, cfg)  # what a test replays a recorded history with
    return handler
