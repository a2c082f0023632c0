"""Schema images, learnt per class: the schema a class's first new actor made in its
on-init, kept as an image (storage/images.py) that later new actors' databases start as,
so that their on-inits find their tables made already."""

from __future__ import annotations

import logging

from ..storage.actordb import ActorDb, StorageError
from ..storage.images import SchemaImage, build_schema_image, why_not_built
from . import event
from .classes import ActorClass

log = logging.getLogger("wkhost")


def image_for(cls: ActorClass | None, enabled: bool) -> SchemaImage | None:
    """What a new database of the class starts as: its image, if learnt and `enabled`."""
    return cls.schema_image if cls is not None and enabled else None


def learn_schema(cls: ActorClass, db: ActorDb, enabled: bool) -> None:
    """After a new actor's on-init: keep its script as the class's schema image, or
    stop using the image if this on-init did something else first."""
    if db.speculation_failed:
        if cls.schema_image is not None:
            log.info("class %s: an on-init did not run the schema its image holds; "
                     "new actors start from the plain template from now on", cls.name)
        cls.schema_image, cls.schema_learning = None, False
        return
    if not (cls.schema_learning and cls.schema_image is None and enabled):
        return
    script = db.schema_script()
    running = event.stack()
    if script is not None and running:
        # The event's deadline bounds it, and its run slot serves others while it runs
        # long: the script is the guest's, and so is its cost.
        ev = running[-1]
        try:
            cls.schema_image = build_schema_image(script, db.path.parent, ev.deadline,
                                                  ev.loan())
        except (StorageError, OSError) as e:  # then it is simply not kept
            log.warning("class %s: no schema image (%s)", cls.name, why_not_built(e))
            cls.schema_learning = False

