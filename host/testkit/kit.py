"""`Kit`: the test kit's one object, over either backend.

    kit = Kit()                                     # plain CPython, no build
    kit.serve("ledger", "ledger/app.py", internal=True)
    orders = kit.serve_workflow("orders", "orders/app.py")
    order = orders.instance("o-1")
    order.start({"item": "book"})
    order.wait_for_status("completed")

`Kit(sandbox=True)` (or WKHOST_TEST_SANDBOX=1 in the environment, or pytest's
`--wk-sandbox`) runs the same test against the real built components, through
`wkhost serve --fake-clock` (sandbox.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from wkguest.durations import Duration, to_ms
from wkguest.types import Response

from .guest import Fetch
from .stubbed import (
    STUB_ACTOR,
    STUB_URL,
    STUB_WORKFLOW,
    CallAnswer,
    ChildAnswer,
    Stubs,
    call_handler,
    child_answer,
)
from .workflows import WorkflowInstance

if TYPE_CHECKING:
    from .sandbox import Sandbox

SANDBOX_ENV = "WKHOST_TEST_SANDBOX"
FetchAnswer = Callable[[Fetch], Response] | Response


class Backend(Protocol):
    def serve(self, cls: str, app: str | Path, internal: bool = False) -> None: ...
    def start(self) -> None: ...
    def request(self, cls: str, id: str, method: str, path: str, body: bytes = b"",
                sender: str = "operator", query: str = "") -> Response: ...
    def on_fetch(self, prefix: str, handler: Callable[[Fetch], Response]) -> None: ...
    def now(self) -> int: ...
    def next_alarm(self) -> int | None: ...
    def run_due(self) -> int: ...
    def skip_to(self, ms: int) -> None: ...
    def close(self) -> None: ...


class WorkflowClass:
    """A workflow class the kit serves: its instances."""

    def __init__(self, kit: Kit, cls: str) -> None:
        self.kit, self.cls = kit, cls

    def instance(self, id: str) -> WorkflowInstance:
        return WorkflowInstance(self.kit, self.cls, id)


def _temporary_root() -> Path:
    """A directory of the kit's own: in memory (/dev/shm) where there is one, since a
    test's databases need no disk, and making and removing them there is quicker."""
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="wk-kit-", dir=where))


def sandbox_wanted() -> bool:
    return os.environ.get(SANDBOX_ENV, "") not in ("", "0")


class Kit:
    """Actors and workflows under test (see the module's doc)."""

    __test__ = False

    def __init__(self, *, sandbox: bool | None = None, root: str | Path | None = None,
                 server_env: dict[str, str] | None = None) -> None:
        """`server_env`: in the sandbox, more environment for `wkhost serve`'s first
        start (a `restart` drops it)."""
        self.sandbox = sandbox_wanted() if sandbox is None else sandbox
        self._own_root = root is None
        self.root = Path(root) if root is not None else _temporary_root()
        self.backend: Backend
        self.sandbox_server: Sandbox | None = None
        if self.sandbox:
            from .sandbox import Sandbox

            self.sandbox_server = Sandbox(self.root, server_env)
            self.backend = self.sandbox_server
        else:
            from .local import Local

            self.backend = Local(self.root / "actors")
        self._started = False
        self.stubs = Stubs()
        self.backend.on_fetch(STUB_URL + "/", self.stubs.answer)

    # -- what it serves ------------------------------------------------------------------
    def serve(self, cls: str, app: str | Path, *, internal: bool = False) -> None:
        """Serve actor class `cls` from the app module at `app` (a path to its .py; in
        the sandbox, also a component built from it, .wasm)."""
        if self._started:
            raise RuntimeError("serve every class before the first request")
        self.backend.serve(cls, app, internal)

    def serve_workflow(self, cls: str, app: str | Path, *, internal: bool = False
                       ) -> WorkflowClass:
        """Serve workflow class `cls` (an app whose Handler is `workflow.serve(...)`)."""
        self.serve(cls, app, internal=internal)
        return WorkflowClass(self, cls)

    def on_fetch(self, url_prefix: str, answer: FetchAnswer) -> None:
        """Answer the actors' fetches of URLs that begin with `url_prefix` with `answer`:
        a function of the request (a `Fetch`), or one canned Response. The first prefix
        that matches answers; a fetch no prefix matches fails as denied."""
        handler = answer if callable(answer) else (lambda _req: answer)
        self.backend.on_fetch(url_prefix, handler)

    def on_call(self, cls: str, answer: CallAnswer, *, internal: bool = False) -> None:
        """Serve class `cls` as the test's own: each request to any of its actors (from
        an actor, or `call`) is answered by `answer`, a function of the request (a
        `wkhost.testkit.stubbed.Call`: cls, id, method, path, query, headers, body,
        sender, json()) or one canned Response."""
        self.serve(cls, STUB_ACTOR, internal=internal)
        self.stubs.calls[cls] = call_handler(answer)

    def mock_child(self, cls: str, *, output: Any = None, error: str | None = None,
                   answer: ChildAnswer | None = None) -> None:
        """Serve workflow class `cls` as the test's own: each instance (a child a
        workflow starts, say) completes with `output`, or fails with `error`; or as
        `answer(id, input)` says ({"output": value} or {"error": text}). Its one step is
        named "wk-kit: the mocked outcome"."""
        self.serve(cls, STUB_WORKFLOW)
        self.stubs.children[cls] = child_answer(output, error, answer)

    # -- requests and time -------------------------------------------------------------
    def call(self, cls: str, id: str, method: str = "POST", path: str = "/",
             body: bytes | str = b"", *, sender: str = "operator") -> Response:
        """A request to actor `cls`/`id` from outside (`sender`: "operator" or
        "public"; `path` may end in "?" and a query), then what is due now is run."""
        raw = body.encode() if isinstance(body, str) else body
        path, _, query = path.partition("?")
        r = self._backend().request(cls, id, method, path, raw, sender, query)
        self.run()
        return r

    def transport(self, cls: str, id: str, method: str, path: str, body: bytes
                  ) -> tuple[int, bytes]:
        r = self._backend().request(cls, id, method, path, body, "operator")
        return r.status, r.body

    def now(self) -> int:
        """The host clock the actors see (ms since the Unix epoch)."""
        return self._backend().now()

    def next_alarm(self) -> int | None:
        return self._backend().next_alarm()

    def run(self) -> int:
        """Run every alarm due now, earliest first, until none is: how many ran."""
        return self._backend().run_due()

    def advance(self, duration: Duration) -> None:
        """Move the clock by `duration` ("3 days", ms), firing each alarm at its time."""
        target = self.now() + to_ms(duration, "duration")
        while True:
            self.run()
            nxt = self.next_alarm()
            if nxt is None or nxt > target:
                break
            self.skip_to(nxt)
        self.skip_to(target)
        self.run()

    def skip_to(self, ms: int) -> None:
        """Move the clock to `ms` (never back)."""
        if ms > self.now():
            self._backend().skip_to(ms)

    def restart(self) -> None:
        """Sandbox only: a new `wkhost serve` on the same data directory, as after a
        crash (the old one, if still running, is killed with SIGKILL)."""
        if self.sandbox_server is None:
            raise RuntimeError("restart needs the sandbox: plain CPython has no server")
        self.sandbox_server.restart()

    def _backend(self) -> Backend:
        if not self._started:
            self.backend.start()
            self._started = True
        return self.backend

    def close(self) -> None:
        self.backend.close()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Kit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
