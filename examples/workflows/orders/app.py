"""The `orders` workflow class: one actor per order, running flow.order."""

from flow import order
from wkguest import workflow

# Retention: a finished order is kept (status, output) for 7 days, then deletes itself.
Handler = workflow.serve(order, workflow.Config(retention_ms=7 * 86_400_000))
