"""Updates in the test kit, on CPython and, through the switch, in the sandbox (the real
component): examples/workflows/cart/app.py, a cart. A user's test sends an update and gets
its handler's answer; a validator's refusal; update-with-start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from wkguest.workflow import WorkflowError
from wkhost.testkit import Kit, WorkflowClass

REPO = Path(__file__).resolve().parents[2]
GUEST = REPO / "examples" / "workflows" / "cart" / "app.py"


@pytest.fixture(scope="module", params=["cpython", pytest.param("sandbox",
                                                                  marks=pytest.mark.e2e)])
def kit(request: pytest.FixtureRequest) -> Iterator[Kit]:
    kit = Kit(sandbox=request.param == "sandbox")
    kit.serve_workflow("carts", GUEST)
    try:
        yield kit
    finally:
        kit.close()


def test_an_update_answers_its_handlers_result(kit: Kit) -> None:
    cart = WorkflowClass(kit, "carts").instance("c1")
    cart.start()
    assert cart.update("add", "book").value() == {"items": 1, "total": 400}
    assert cart.update("add", "pen").value() == {"items": 2, "total": 700}
    with pytest.raises(WorkflowError) as e:
        cart.update("add", "pen")
    assert e.value.kind == "update-rejected" and "in the cart already" in e.value.message
    cart.send_event("checkout", "ann")
    assert cart.status().output == {"items": [["book", 400], ["pen", 300]], "paid_by": "ann"}
    assert [s.kind for s in cart.steps()] == ["update", "step", "update"] * 2 + ["wait", "step"]


def test_update_with_start_creates_the_cart_with_its_item(kit: Kit) -> None:
    cart = WorkflowClass(kit, "carts").instance("c2")
    st = cart.start(None, update=("add", "lamp"))
    assert st.created and st.update is not None and st.update.state == "accepted"
    assert cart.query("items") == [["lamp", 400]]
    with pytest.raises(WorkflowError) as e:  # found: its validator refuses the same item
        cart.start(None, update=("add", "lamp"))
    assert e.value.kind == "update-rejected"
    st = cart.start(None, update=("add", "rug"))
    assert not st.created and st.update is not None
    assert cart.query("items") == [["lamp", 400], ["rug", 300]]
