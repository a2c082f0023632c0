"""The `publish` workflow class: a second Cloudflare-shaped workflow, for what
IngestMaterial does not use: `step.do`'s `rollback` (a saga, mapped onto the runner's
compensation) and a terminate with rollback.

Params: {"materialId": id, "batches": [...] (default a, b, c), "fail": bool, "wait": bool,
"announce_config": a step.do config}.
Each batch is put in the search index by its own step, whose rollback takes it out
again (the `pages` actor's /index and /unindex, idempotent by the key). With "wait", it
then waits a day for the event "go" (a terminate with rollback stops it there). Then it
announces the material; with "fail" the catalogue refuses (a NonRetryableError): the
instance errors and the rollbacks run, newest first, each told the error.
"announce_config" is the announce step's config (None: Cloudflare's defaults), there to
show a mistake in the code: an unknown key parks the instance, naming it.
"""

from __future__ import annotations

from typing import Any

from flow import pages_call
from wkguest.cloudflare import (
    NonRetryableError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
    serve,
)


class PublishMaterial(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        material = event.payload["materialId"]
        for batch in event.payload.get("batches", ["a", "b", "c"]):
            key = f"{event.instance_id}:{batch}"  # the same on every replay
            # The fn runs inside step.do (this iteration's key); the rollback, later, is
            # given the step's recorded output instead of a closure over the loop.
            step.do(f"index {batch}", lambda: pages_call("/index", {"key": key}),  # noqa: B023
                    rollback=unindex)
        if event.payload.get("wait"):
            step.wait_for_event("go", type="go", timeout="1 day")
        step.do("announce", event.payload.get("announce_config"),
                lambda: announce(material, bool(event.payload.get("fail"))))
        return {"published": material}


def unindex(ctx: Any, output: Any, error: str | None) -> None:
    """The rollback: `output` is what the step recorded ({"indexed": key}), `error` why
    the workflow failed (None for a terminate with rollback)."""
    pages_call("/unindex", {"key": output["indexed"], "why": error})


def announce(material: str, fail: bool) -> Any:
    try:
        return pages_call("/announce", {"material": material, "fail": fail})
    except RuntimeError as e:
        if "answered 409" in str(e):  # refused: trying again cannot help
            raise NonRetryableError(str(e)) from None
        raise


Handler = serve(PublishMaterial)
