"""Groups of branches: `wf.all`, `wf.all_settled` and `wf.any`.

(Being built.)
"""

from __future__ import annotations


class Groups:
    """A mixin of `Run`: the group primitives."""

    __slots__ = ()
