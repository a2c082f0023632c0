"""Actor classes: what a class is made of, loading one, and who may reach it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..engine.components import component_protocols, load_served_component
from ..engine.instance import ComponentExports, Engine, Linker
from ..errors import Forbidden, NotThatProtocol
from ..storage import paths
from ..storage.images import SchemaImage
from ..types import Sender

Access = Literal["public", "internal"]


@dataclass
class ActorClass:
    name: str
    wasm: Path
    exports: ComponentExports
    linker: Linker  # this class's own: see interfaces/linker.py's make_linker
    access: Access = "public"
    reuse_instances: bool = False  # see engine/spare_instances.py
    # What the class's new actors' databases start as, once learnt (events/schema_learning.py,
    # storage/images.py); learning stops for good once an on-init did not match its image.
    schema_image: SchemaImage | None = None
    schema_learning: bool = True
    # What the component declares it answers (its `wk-protocols` section, engine/): a
    # request that names another protocol in its `wk-protocol` header reaches no guest.
    protocols: frozenset[str] = frozenset()


def load_class(engine: Engine, name: str, wasm: Path, cache_dir: Path,
               new_linker: Callable[[], Linker], access: Access,
               reuse_instances: bool) -> ActorClass:
    """Check the class's name, load (or compile) its component into `engine`, and give
    it a Linker of its own."""
    paths.check_class(name)
    component = load_served_component(engine, wasm, cache_dir)
    return ActorClass(name, wasm, ComponentExports(component), new_linker(), access,
                      reuse_instances, protocols=component_protocols(wasm))


def check_access(cls: ActorClass, sender: Sender) -> None:
    if sender.kind == "public" and cls.access == "internal":
        raise Forbidden(f"class {cls.name!r} is internal: only actors and operators call it")


def check_protocol(cls: ActorClass, headers: list[tuple[str, str]]) -> None:
    """A request that names its protocol (`wk-protocol: NAME`, lower-case headers)
    reaches only a class whose component declares NAME. The host knows nothing of
    what a protocol means: this only keeps a client of one (say, `wkhost workflow`)
    from running another class's code with its request."""
    for k, v in headers:
        if k.lower() == "wk-protocol":
            declared = cls.protocols
            if v.strip() not in declared:
                raise NotThatProtocol(
                    f"class {cls.name!r} does not declare the protocol {v.strip()!r} "
                    f"(it declares {', '.join(sorted(declared)) or 'none'}); "
                    "nothing was run")
            return
