"""wkhost's pytest plugin (registered as the `wkhost` pytest11 entry point): the `wk_kit`
fixture, and the switch that runs the same tests in the sandbox.

    def test_order(wk_kit):
        orders = wk_kit.serve_workflow("orders", "orders/app.py")
        ...

`pytest --wk-sandbox` (or WKHOST_TEST_SANDBOX=1) gives every `wk_kit` the real built
components in `wkhost serve --fake-clock` instead of plain CPython.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
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
