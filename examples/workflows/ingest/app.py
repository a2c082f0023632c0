"""The `ingest` workflow class: flow.IngestMaterial, served (seed 003's
`withWorkflows(app, { INGEST: IngestMaterial })` is, here, a class of its own that the
app actor reaches through its binding, `Workflow("ingest")`)."""

from flow import IngestMaterial
from wkguest.cloudflare import serve

Handler = serve(IngestMaterial)
