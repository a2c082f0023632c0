"""The composition root: the `Host` (host.py), which builds every part below it and hands
each what it uses; the host as the WIT interfaces see it (links.py, the ports of
interfaces/ports.py); the gauges read off the host's state at a scrape (gauges.py);
cluster mode's node (cluster_node.py); and what a process sets up once before a Host runs
in it (process_setup.py). What happens to an event is events/, the machinery under it
runtime/: docs/architecture.md."""
