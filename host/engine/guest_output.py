"""A guest's stdout and stderr: a pipe that wasmtime writes with libc's `write`.

Why not wasmtime-py's `stdout_custom`: it calls a Python function for every write the
guest makes, on one of wasmtime's threads, which must first take the GIL; the guest waits
for it burning no fuel, and its event holds its run slot all the while. A guest writing a
line at a time held its neighbours up for seconds against a CPU budget of milliseconds.
Here each write is one `write(2)` to a non-blocking pipe, made by wasmtime itself: no
Python, no GIL. The pipe holds the event's output; a write that does not fit fails (the
pipe is full), so a flood costs the guest its own handling of the error. The host reads
the pipe after each call into the guest.

Each stream owns a write end of its own, which wasmtime closes (libc's `close`, as the
stream's finalizer) when it drops the stream with its Store: never sooner, so no write
can reach a file that took the number over. The read end is this object's.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import weakref

from wasmtime import WasiConfig
from wasmtime import _bindings as ffi  # the C API itself: see the module's docstring

_F_SETPIPE_SZ = 1031
_F_GETPIPE_SZ = 1032

try:
    _libc = ctypes.CDLL(None)
    _WRITE_ADDR: int | None = ctypes.cast(_libc.write, ctypes.c_void_p).value
    _CLOSE_ADDR: int | None = ctypes.cast(_libc.close, ctypes.c_void_p).value
except (OSError, AttributeError):  # no libc to call: the Python callback path
    _WRITE_ADDR = _CLOSE_ADDR = None

# The C types of `wasi_config_set_stdout_custom`'s callbacks, as wasmtime-py declares
# them: (data, buf, len) -> ssize_t, and (data) -> void. `write(fd, buf, len)` and
# `close(fd)` have those shapes, with the fd as the data pointer.
_WriteFn = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_ubyte), ctypes.c_size_t)
_FinalizeFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def available() -> bool:
    return _WRITE_ADDR is not None and _CLOSE_ADDR is not None


class OutputPipe:
    def __init__(self, cap: int) -> None:
        """A pipe for up to `cap` bytes of an event's output (rounded up to what the
        kernel makes a pipe hold: a power of two of pages, at least one)."""
        read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            with contextlib.suppress(OSError):  # past /proc/sys/fs/pipe-max-size: as made
                fcntl.fcntl(write_fd, _F_SETPIPE_SZ, max(1, cap))
            self.capacity = fcntl.fcntl(write_fd, _F_GETPIPE_SZ)
            self._stderr_fd = fcntl.fcntl(write_fd, fcntl.F_DUPFD_CLOEXEC, 0)
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        self._stdout_fd = write_fd
        self._read_fd = read_fd
        weakref.finalize(self, os.close, read_fd)

    def attach(self, wasi: WasiConfig) -> None:
        """Make `wasi`'s stdout and stderr this pipe's. From here on, wasmtime owns (and
        closes) the write ends."""
        assert _WRITE_ADDR is not None and _CLOSE_ADDR is not None  # see available()
        write = _WriteFn(_WRITE_ADDR)
        close = _FinalizeFn(_CLOSE_ADDR)
        ffi.wasi_config_set_stdout_custom(wasi.ptr(), write, self._stdout_fd, close)
        ffi.wasi_config_set_stderr_custom(wasi.ptr(), write, self._stderr_fd, close)

    def drain(self) -> bytes:
        """What the guest wrote since the last drain (at most `capacity` bytes)."""
        chunks = []
        while True:
            try:
                chunk = os.read(self._read_fd, self.capacity)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
