"""The host's one-line reasons that the guest SDK names (plain CPython, no bindings).

Text for people: code tells these cases apart by a kind (`lifecycle.last_trap_info()`'s
`kind`, an error's `.kind`). Spelled here once on the guest's side, so that the workflow
runner, which imports no bindings, reads the same constant as `wkguest.lifecycle`; the
host spells each too (tests/unit/test_sdk_bindings.py checks that the two agree).
"""

from __future__ import annotations

__all__ = ["NARROWED_REASON"]

# What `lifecycle.last_trap()` says of an event whose guest code was still running at the
# deadline it set itself (`lifecycle.narrow_deadline`): wkhost.core.instance.NARROWED.
NARROWED_REASON = "the event passed the deadline it set itself (lifecycle.narrow-deadline)"
