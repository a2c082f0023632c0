"""The host itself: the `Host` façade, and the parts that run events (requests,
lifecycle, settling, alarms, eviction, memory, event threads, the live instance), with
its configuration. Above the interfaces, below the network: docs/architecture.md."""
