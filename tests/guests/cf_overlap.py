"""A Cloudflare-shaped workflow whose parallel steps wait together, and the keys of its
fetches, for tests/testkit/test_kit_overlap.py (run on CPython and in the sandbox).

    quotes   `step.all` of three `step.branch`es, each an `async` function that POSTs to
             https://quotes.example.test/<name> (awaiting wkguest.overlap.fetch), the
             second with a config of its own and the step context
    pay      a plain `step.do` that POSTs twice and GETs once (blocking http.fetch):
             its POSTs carry the step's key, then that key with "-2"; the GET none
    own      a step that sets its own Idempotency-Key
Output: {"quotes": [...], "pay": [...], "own": [...]}.
"""

from __future__ import annotations

from typing import Any

from wkguest import http, overlap
from wkguest.cloudflare import WorkflowEntrypoint, WorkflowEvent, WorkflowStep, serve

SITE = "https://quotes.example.test"


def _quote(name: str) -> Any:
    async def quote() -> Any:
        r = await overlap.fetch(f"{SITE}/{name}", "POST", body=name)
        return r.text()
    return quote


class Quotes(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def with_ctx(ctx: Any) -> Any:
            r = await overlap.fetch(f"{SITE}/b?attempt={ctx.attempt}", "POST")
            return r.text()

        quotes = step.all([step.branch("a", _quote("a")),
                           step.branch("b", {"retries": {"limit": 2}}, with_ctx),
                           step.branch("c", _quote("c"))])

        def pay() -> Any:
            return [http.fetch(f"{SITE}/pay", "POST").text(),
                    http.fetch(f"{SITE}/pay", "GET").text(),
                    http.fetch(f"{SITE}/pay", "POST").text()]

        def own() -> Any:
            return http.fetch(f"{SITE}/own", "POST",
                              headers=[("Idempotency-Key", "mine")]).text()

        return {"quotes": quotes, "pay": step.do("pay", pay), "own": step.do("own", own)}


Handler = serve(Quotes)
