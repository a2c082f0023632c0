"""`wkhost serve`'s options and HostConfig agree: each option that sets a field takes its
default and help from the field (host/config.py), in the option's unit, and a serve
with no options configures the host as HostConfig() does, but for a default that serve
alone has, declared in the field's flag (serve_default: --memory-budget). An option with
a default of its own, written anywhere else, fails here."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from wkhost.cli.main import make_parser
from wkhost.cli.serve import serve_options
from wkhost.cli.serve_flags import host_config, option_dest
from wkhost.config import HostConfig, serve_flags
from wkhost.fetch import FetchPolicy
from wkhost.net.serve import ServeOptions

# The options of the command itself, which set no HostConfig field (--allow-http sets
# `http` through FetchPolicy.parse, checked below; --fetch-via its `via`).
COMMAND_OPTIONS = {"help", "actor", "access", "reuse_instances", "host", "port", "processes",
                   "process", "listen_fd", "supervisor_pid", "lock_fd", "fake_clock_start",
                   "cores", "cpu_affinity", "allow_http", "admin_token_file", "log_level",
                   "log_format", "fake_clock", "schedules", "tokens_file", "fetch_via"}


def serve_parser() -> argparse.ArgumentParser:
    sub = next(a for a in make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices["serve"]
    return parser


def options() -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in serve_parser()._actions if a.option_strings}


def parsed(*args: str) -> argparse.Namespace:
    return serve_parser().parse_args(["--actor", "x=a.wasm", *args])


def test_every_field_option_defaults_to_the_fields_default_in_its_unit() -> None:
    by_option = options()
    assert serve_flags(), "no HostConfig field is set by an option"
    for f, spec in serve_flags():
        action = by_option[spec.option]
        default = action.default * spec.unit if spec.unit != 1 else action.default
        want = f.default if spec.serve_default is None else spec.serve_default
        assert default == want, (spec.option, action.default, f.name, want)
        assert action.help and action.help.strip(), spec.option
        if not isinstance(f.default, bool) or f.default:  # a switch that is off says so
            assert "default" in action.help, spec.option


def test_every_serve_option_is_a_fields_or_the_commands_own() -> None:
    dests = {a.dest for a in serve_parser()._actions}
    fields = {option_dest(spec) for _, spec in serve_flags()}
    assert dests - fields == COMMAND_OPTIONS
    assert not fields & COMMAND_OPTIONS


def test_serve_with_no_options_configures_the_defaults() -> None:
    args = parsed()
    # But for the options whose serve default differs from HostConfig's (serve_default).
    serve = {f.name: spec.serve_default for f, spec in serve_flags()
             if spec.serve_default is not None}
    assert serve == {"memory_budget_bytes": 512 << 20}
    assert host_config(args, http=FetchPolicy.parse(args.allow_http)) == HostConfig(**serve)
    assert serve_options(args, [], {}) == ServeOptions([], {})


def _another(value: Any, unit: int) -> tuple[str, Any]:
    """An option's argument other than its default, and the field's value for it."""
    if isinstance(value, Path) or value is None:
        return "/else/where", Path("/else/where")
    if isinstance(value, str):
        return "else.where", "else.where"
    n = value // unit + 3 if isinstance(value, int) else value + 1.5
    return str(n), n * unit


@pytest.mark.parametrize("name", [f.name for f, _ in serve_flags()])
def test_each_option_sets_its_field_in_the_fields_unit(name: str) -> None:
    f, spec = next((f, s) for f, s in serve_flags() if f.name == name)
    if isinstance(f.default, bool):
        argv, want = [spec.option if not f.default else
                      spec.option.replace("--", "--no-", 1)], not f.default
    else:
        text, want = _another(f.default, spec.unit)
        argv = [spec.option, text]
    config = host_config(parsed(*argv))
    assert getattr(config, name) == want, (argv, getattr(config, name))


def test_processes_default_to_one_a_core_and_to_one_in_a_cluster(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from wkhost.cli import serve_flags as flags

    monkeypatch.setattr(flags, "usable_cores", lambda: 3)
    assert parsed().processes == "auto"
    assert flags.processes(parsed()) == 3
    assert flags.processes(parsed("--processes", "auto")) == 3
    assert flags.processes(parsed("--processes", "1")) == 1
    assert flags.processes(parsed("--cluster", "postgresql://x", "--node-id", "n")) == 1
    assert flags.processes(parsed("--process", "1/4")) == 4  # told by its supervisor
    monkeypatch.setattr(flags, "usable_cores", lambda: 500)
    assert flags.processes(parsed()) == flags.MAX_PROCESSES
    with pytest.raises(SystemExit):
        parsed("--processes", "many")
