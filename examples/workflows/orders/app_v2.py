"""The same `orders` class in its next version, which running orders survive
(flow.order_v2: a change behind `wf.patched`, a step appended)."""

from flow import order_v2
from wkguest import workflow

Handler = workflow.serve(order_v2, workflow.Config(retention_ms=7 * 86_400_000))
