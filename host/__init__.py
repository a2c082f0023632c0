"""wkhost: a durable-execution host for WebAssembly actors."""

__version__ = "0.1.0"
