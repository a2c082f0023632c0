"""The test kit's stub actor: each request it gets goes, by a fetch, to the test's
handler for its class (`Kit.on_call`), whose answer it gives back."""

from __future__ import annotations

from urllib.parse import quote

from stub_url import STUB_URL
from wkguest import Actor, Request, Response, export, http, lifecycle


class StubActor(Actor):
    def handle(self, req: Request) -> Response:
        me = lifecycle.self_ref()
        sender = req.sender.kind if req.sender.actor is None \
            else f"actor {req.sender.actor.cls}/{req.sender.actor.id}"
        url = f"{STUB_URL}/call/{quote(me.cls, safe='')}/{quote(me.id, safe='')}{req.path}"
        headers = [*req.headers, ("wk-kit-sender", sender)]
        r = http.fetch(url + (f"?{req.query}" if req.query else ""), req.method, headers,
                       req.body)
        return Response(r.status, [(k, v) for k, v in r.headers
                                   if k.lower() not in ("content-length", "connection",
                                                        "date", "server")], r.body)


Handler = export(StubActor)
