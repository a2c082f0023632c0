"""Where the stub apps reach the test kit (a reserved name, RFC 2606: never a real host).
A sibling module of the stubs, so that a component built from one finds it."""

STUB_URL = "https://wk-kit.test"
