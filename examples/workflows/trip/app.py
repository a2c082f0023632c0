"""The `trips` workflow class: flow.trip, a saga that books a flight and a hotel together,
then pays (see flow.py)."""

from flow import trip
from wkguest import workflow

Handler = workflow.serve(trip, workflow.Config(retention_ms=86_400_000))
