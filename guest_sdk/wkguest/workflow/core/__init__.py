"""The replay core of wkguest.workflow: it imports no feature (docs/architecture.md).

The cursor over the journal and its kinds, the frontier where replay meets new work, the
journal, the store and its schema, the runner's loop, and what they stand on: values and
their encoding, step options, the deterministic helpers and the `Backend`.
"""
