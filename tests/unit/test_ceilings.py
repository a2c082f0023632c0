"""tests/lint/ceilings.py, the size ceilings of `make lint`, on files made here."""

from __future__ import annotations

from pathlib import Path

from tests.lint.ceilings import (
    FUNCTION_LINES,
    MODULE_LINES,
    check,
    main,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def a_function(name: str, lines: int) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return f"def {name}():\n{body}"


def test_a_function_at_the_ceiling_passes_and_one_line_more_is_named(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "ok.py", a_function("fits", FUNCTION_LINES))
    write(tmp_path / "pkg" / "long.py", a_function("too_long", FUNCTION_LINES + 1))
    found = check([tmp_path / "pkg"], tmp_path)
    assert [(b.path, b.line, b.what, b.lines) for b in found] == [
        ("pkg/long.py", 1, "too_long()", FUNCTION_LINES + 1)]


def test_a_module_over_the_ceiling_is_named_and_methods_count_too(tmp_path: Path) -> None:
    lines = a_function("m", FUNCTION_LINES + 5).splitlines()
    method = "".join(f"    {line}\n" for line in lines)
    text = "class C:\n" + method + "".join(f"y{i} = {i}\n" for i in range(MODULE_LINES))
    write(tmp_path / "big.py", text)
    found = {(b.what, b.lines) for b in check([tmp_path], tmp_path)}
    assert found == {("the module", len(text.splitlines())), ("m()", FUNCTION_LINES + 5)}


def test_the_host_and_the_guest_sdk_have_one_module_ceiling(tmp_path: Path) -> None:
    text = "".join(f"y{i} = {i}\n" for i in range(MODULE_LINES + 1))
    write(tmp_path / "guest_sdk" / "wkguest" / "big.py", text)
    write(tmp_path / "host" / "same.py", text)
    write(tmp_path / "host" / "fits.py", "".join(f"y{i} = {i}\n" for i in range(MODULE_LINES)))
    found = sorted((b.path, b.ceiling) for b in check([tmp_path], tmp_path))
    assert found == [("guest_sdk/wkguest/big.py", MODULE_LINES), ("host/same.py", MODULE_LINES)]


def test_the_command_fails_on_a_breach_and_passes_without(tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "clean" / "a.py", a_function("short", 3))
    assert main(["clean"]) == 0
    write(tmp_path / "dirty" / "b.py", a_function("long", FUNCTION_LINES + 2))
    assert main(["dirty"]) == 1
    expected = f"dirty/b.py:1: long() has {FUNCTION_LINES + 2} lines (ceiling {FUNCTION_LINES})"
    assert expected in capsys.readouterr().out
    assert main([]) == 2
