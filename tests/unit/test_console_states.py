"""The console's list of a workflow's states (host/net/console/api.py) is the runner's."""

from __future__ import annotations

from wkguest.workflow.status import STATES
from wkhost.net.console.api import WORKFLOW_STATES


def test_the_console_counts_every_state_a_workflow_has() -> None:
    assert sorted(WORKFLOW_STATES) == sorted(STATES)
