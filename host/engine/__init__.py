"""wasmtime: the one Engine, the compile cache, the instance pool, the conversion patch,
guest output, and building components with componentize-py."""
