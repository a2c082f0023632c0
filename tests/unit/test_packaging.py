"""Every package under host/ and guest_sdk/wkguest/ is in pyproject's setuptools list.

The editable install that tests and CI use finds a package whether it is listed or not,
so a package left out would go missing only from a wheel: the host's moves into events/,
runtime/ and replication/ did, unseen, until a review read the list."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def packages_on_disk() -> set[str]:
    found = set()
    for top, folder in (("wkhost", REPO / "host"), ("wkguest", REPO / "guest_sdk" / "wkguest")):
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            found.add(".".join((top, *parts)))
    return found


def test_every_package_is_listed_and_every_listed_one_exists() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    on_disk = packages_on_disk()
    assert on_disk - listed == set(), "packages a wheel would leave out"
    assert listed - on_disk == set(), "listed packages that do not exist"
