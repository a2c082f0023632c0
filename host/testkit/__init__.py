"""wkhost's test kit for users' actors and workflows (docs/testing-workflows.md).

- `Kit` (kit.py): serve app modules, answer their fetches, move the clock; on plain
  CPython with no build (local.py), or, through the switch, the real built components in
  `wkhost serve --fake-clock` (sandbox.py);
- `WorkflowInstance` (workflows.py): drive one instance, mock its steps, sleeps and
  events, wait for a state while time skips, read its steps, attempts and tables;
- `check_history`, `record_history` (histories.py): golden histories replayed against
  the current code;
- `CrashPoints` (crash_points.py, crash_script.py, crash_report.py): the crash-point
  harness, a run killed with SIGKILL at each durable boundary and judged against a
  clean one (`wkhost test crash-points`);
- the pytest plugin (plugin.py): the `wk_kit` and `wk_crash_points` fixtures and
  `--wk-sandbox`.
"""

from wkguest.types import Response

from .crash_points import CrashPoints, Target
from .crash_report import Report
from .crash_script import Entry
from .guest import Fetch
from .kit import Kit, WorkflowClass
from .workflows import Attempt, Step, WorkflowInstance

__all__ = ["Attempt", "CrashPoints", "Entry", "Fetch", "Kit", "Report", "Response", "Step",
           "Target", "WorkflowClass", "WorkflowInstance"]
