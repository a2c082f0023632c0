"""wkhost's pytest plugin (registered as the `wkhost` pytest11 entry point): the `wk_kit`
fixture, the switch that runs the same tests in the sandbox, and `wk_crash_points`, the
crash-point harness over the real built components.

    def test_order(wk_kit):
        orders = wk_kit.serve_workflow("orders", "orders/app.py")
        ...

`pytest --wk-sandbox` (or WKHOST_TEST_SANDBOX=1) gives every `wk_kit` the real built
components in `wkhost serve --fake-clock` instead of plain CPython.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .crash_report import Report
    from .kit import Kit



def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("wkhost").addoption(
        "--wk-sandbox", action="store_true", default=False,
        help="run wk_kit tests against the real built components (wkhost serve "
             "--fake-clock) instead of plain CPython; or set WKHOST_TEST_SANDBOX=1")


@pytest.fixture
def wk_kit(request: pytest.FixtureRequest) -> Iterator[Kit]:
    """A test kit (wkhost.testkit.Kit) of this test's own, closed (its files removed)
    after it."""
    from .kit import Kit

    sandbox = True if request.config.getoption("--wk-sandbox") else None  # None: the env's
    kit = Kit(sandbox=sandbox)
    try:
        yield kit
    finally:
        kit.close()


@pytest.fixture
def wk_crash_points() -> Callable[..., Report]:
    """The crash-point harness (wkhost.testkit.CrashPoints), always over the real built
    components: a function of the workflow's class, app (.py or .wasm) and input, with
    keywords `others` ({class: app}), `internal` (classes), `events` (a script's JSON
    list), `only` (crash points), `id`, `jobs`; its Report.

        report = wk_crash_points("orders", "orders/app.py", {"item": "book"},
                                 others={"ledger": "ledger/app.py"}, internal=["ledger"],
                                 events=[{"event": "approved", "payload": {"by": "ann"}}])
        assert report.ok, report.text()
    """
    from .crash_points import CrashPoints, Target
    from .crash_script import parse_script

    def run(cls: str, app: str | Path, input: Any = None, *,
            others: dict[str, str | Path] | None = None, internal: tuple[str, ...] = (),
            events: list[Any] | None = None, only: list[str] | None = None,
            id: str = "crash-points", jobs: int = 1) -> Report:
        return CrashPoints(
            Target(cls, Path(app), cls in internal), input,
            others=[Target(c, Path(a), c in internal) for c, a in (others or {}).items()],
            script=parse_script(events or []), id=id, only=only, jobs=jobs).run()

    return run
