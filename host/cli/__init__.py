"""The `wkhost` command: one module per command, the exit-code contract, and the one
admin HTTP helper under the workflow client."""
