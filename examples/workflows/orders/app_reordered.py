"""The same `orders` class after a bad deploy: its steps in another order."""

from flow import order_reordered
from wkguest import workflow

Handler = workflow.serve(order_reordered, workflow.Config(retention_ms=7 * 86_400_000))
