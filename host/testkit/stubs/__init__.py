"""The test kit's stub apps: guest code, served under the classes a test answers itself
(`Kit.on_call`, `Kit.mock_child`), on CPython and, built, in the sandbox. Each passes
what it is asked to the kit by a fetch of STUB_URL, which the kit answers (stubbed.py)."""
