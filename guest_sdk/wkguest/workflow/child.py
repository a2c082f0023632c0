"""Child workflows: `wf.child(cls, id, input)`.

(Being built.)
"""

from __future__ import annotations


class Children:
    """A mixin of `Run`: starting child workflows and waiting for them."""

    __slots__ = ()
