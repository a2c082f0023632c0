"""bench.profile_workflows: reading `perf script` and splitting the CPU per workflow.

The text below has the shape `perf script -F pid,tid,ip,sym,dso` prints for a `-g`
recording (a "pid/tid" line, then the call chain leaf first, each frame indented by a
tab); the recording itself needs perf and a server, which `python -m
bench.profile_workflows` runs."""

from __future__ import annotations

import pytest

from bench.profile_workflows import (
    CPYTHON,
    EVENT,
    GUEST,
    KERNEL,
    MAIN,
    REST,
    SQLITE,
    parse_perf_script,
    summarize,
    syscall_of,
    what_runs,
)

CWASM = "/work/.cache/compiled/1326e0e1-fuel1-epoch1-wasmtime50.0.1.cwasm"
PY = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"
APSW = "/work/.venv/lib/python3.11/site-packages/apsw/__init__.cpython-311-x86_64-linux-gnu.so"


def sample(pid: int, tid: int, *frames: str) -> str:
    return f" {pid}/{tid}  \n" + "".join(f"\t    7f00{i:04x} {f}\n"
                                         for i, f in enumerate(frames)) + "\n"


# Process 10: its main thread (10) runs the loop; thread 11 runs events; thread 12 syncs.
SCRIPT = (
    sample(10, 11, f"wasm[8]::function[4035]::_PyEval_EvalFrameDefault ({CWASM})")
    + sample(10, 11, f"wasm[8]::function[1]::dlmalloc ({CWASM})")
    + sample(10, 11, f"_PyEval_EvalFrameDefault ({PY})")
    + sample(10, 11, f"sqlite3VdbeExec ({APSW})")
    + sample(10, 11, "iowrite16 ([kernel.kallsyms])", "ext4_sync_file ([kernel.kallsyms])",
             "__x64_sys_fsync ([kernel.kallsyms])", "do_syscall_64 ([kernel.kallsyms])")
    + sample(10, 11, "finish_task_switch.isra.0 ([kernel.kallsyms])",
             "schedule ([kernel.kallsyms])")
    + sample(10, 10, f"_PyEval_EvalFrameDefault ({PY})")
    + sample(10, 10, "tcp_v4_rcv ([kernel.kallsyms])", "__x64_sys_sendto ([kernel.kallsyms])")
    + sample(10, 12, "iowrite16 ([kernel.kallsyms])", "__x64_sys_fdatasync ([kernel.kallsyms])")
)


def test_the_samples_and_their_call_chains_are_read_leaf_first() -> None:
    samples = parse_perf_script(SCRIPT)
    assert [(s.pid, s.tid) for s in samples] == [(10, 11)] * 6 + [(10, 10)] * 2 + [(10, 12)]
    assert samples[4].frames[0] == "iowrite16 ([kernel.kallsyms])"
    assert samples[4].frames[2] == "__x64_sys_fsync ([kernel.kallsyms])"
    assert len(samples[4].frames) == 4


@pytest.mark.parametrize(("frame", "kind"), [
    (f"x ({CWASM})", GUEST),
    (f"PyObject_GetAttr ({PY})", CPYTHON),
    (f"sqlite3RunParser ({APSW})", SQLITE),
    ("schedule ([kernel.kallsyms])", KERNEL),
])
def test_what_runs_comes_from_the_object_sampled(frame: str, kind: str) -> None:
    assert what_runs(frame) == kind


def test_a_kernel_sample_is_put_down_to_its_syscall() -> None:
    assert syscall_of(["iowrite16 ([k])", "__x64_sys_fsync ([k])"]) == "fsync"
    assert syscall_of(["x ([k])", "__do_sys_newfstatat ([k])"]) == "newfstatat"
    assert syscall_of(["clear_page ([k])", "asm_exc_page_fault ([k])"]) == "page fault"
    assert syscall_of(["finish_task_switch.isra.0 ([k])", "schedule ([k])"]).startswith(
        "(interrupts, switches: finish_task_switch")


def test_the_cpu_per_workflow_by_thread_and_by_what_runs() -> None:
    # 9 samples at 1,000 Hz over 2 workflows: each sample is 0.5 ms of one workflow's CPU.
    p = summarize(parse_perf_script(SCRIPT), workflows=2, hz=1000)
    assert p.per_workflow_us == pytest.approx({EVENT: 3000, MAIN: 1000, REST: 500})
    assert p.by_role[EVENT] == pytest.approx(
        {GUEST: 1000, CPYTHON: 500, SQLITE: 500, KERNEL: 1000})
    assert p.by_role[MAIN] == pytest.approx({CPYTHON: 500, KERNEL: 500})
    # Only the event threads' kernel time is split by syscall.
    assert set(p.event_syscalls) == {"fsync", "(interrupts, switches: finish_task_switch.isra.0)"}
    assert p.event_syscalls["fsync"] == pytest.approx(500)


def test_a_thread_that_seldom_runs_the_guest_is_not_an_event_thread() -> None:
    # One guest sample in 25: below one in twenty.
    script = sample(1, 2, f"g ({CWASM})") + sample(1, 2, f"p ({PY})") * 24
    assert set(summarize(parse_perf_script(script), 1, 1000).per_workflow_us) == {REST}
