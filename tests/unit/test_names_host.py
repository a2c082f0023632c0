"""policy.names_host over scripts longer than one search slice: the prefix is found
wherever it lies, across a slice's edge too, in any case, and only where it is."""

from __future__ import annotations

import pytest
from wkhost.storage import policy

SLICE = policy._SEARCH_SLICE
PREFIX = policy.HOST_PREFIX


@pytest.mark.parametrize("at", [0, 1, SLICE - len(PREFIX), SLICE - 3, SLICE - 1, SLICE,
                                SLICE + 1, 2 * SLICE - 4, 3 * SLICE])
@pytest.mark.parametrize("spelling", [PREFIX, PREFIX.upper(), "_Wk_HoSt_"])
def test_the_prefix_is_found_at_any_place_of_a_long_script(at: int, spelling: str) -> None:
    script = " " * at + spelling + " " * 10
    assert policy.names_host(script)


def test_a_long_script_without_it_is_not_named() -> None:
    script = ("SELECT 1; -- _wk_hos\n" * (3 * SLICE // 20))[:3 * SLICE]
    assert len(script) > 2 * SLICE
    assert not policy.names_host(script)


def test_characters_that_lower_to_two_do_not_hide_it() -> None:
    # U+0130 lowers to two characters: the slices' overlap counts characters of the text.
    script = "\u0130" * (SLICE - 4) + PREFIX
    assert policy.names_host(script)
