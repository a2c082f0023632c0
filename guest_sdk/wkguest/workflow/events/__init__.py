"""What a workflow shows outside: `wf.emit` and `wf.query` (calls.py), the dry replay
that answers queries (dry_replay.py), and the `events` and `query` routes (routes.py).
The stream's table, `_wk_wf_emit`, is the core's (core/stream.py): its trigger writes
the journal's entries.
"""
