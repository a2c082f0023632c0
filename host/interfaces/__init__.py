"""The WIT interfaces a guest imports: the linker, one module per interface, and the
ports through which they reach the host (never the `Host` itself)."""
