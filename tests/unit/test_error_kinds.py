"""Each error class names its wire kinds itself (host/errors.py), with the values that
were once derived from its class name: what the processes send each other, and what an
actor's call answers its caller. Renaming a class changes neither."""

from __future__ import annotations

import pytest
from wkhost import errors
from wkhost.errors import HostError


def _classes(base: type[HostError]) -> list[type[HostError]]:
    found = [base]
    for sub in base.__subclasses__():
        found += _classes(sub)
    return found


CLASSES = [c for c in _classes(HostError) if c.__module__ == errors.__name__]


def old_peer_kind(e: HostError) -> str:
    """host/net/peers.py before: the class's name."""
    return type(e).__name__


def old_call_kind(e: HostError) -> str:
    """host/interfaces/actors.py's `_kind` before."""
    return {
        "UnknownClass": "unknown",
        "BadRequest": "invalid",
        "CallRefused": "refused",
        "Overloaded": "refused",
        "PeerUnavailable": "refused",
        "LeaseLost": "refused",  # newer than the rule: a PeerUnavailable, answered alike
        "NotOwnerNow": "refused",
        "PeerLost": "callee-lost",
        "DeadlineExceeded": "timeout",
        "BudgetExceeded": "callee-budget",
        "GuestFailed": "callee-trapped",
        "TooLarge": "too-large",
        "StorageFailed": "storage",
    }.get(type(e).__name__, "error")


def old_decoded(name: str) -> type[HostError]:
    """host/net/peers.py before: the class of that name in host/errors.py, else HostError."""
    kind = getattr(errors, name, HostError)
    return kind if isinstance(kind, type) and issubclass(kind, HostError) else HostError


def test_every_class_of_the_module_is_seen() -> None:
    assert len(CLASSES) == 19 and {errors.ActorLimit, errors.BudgetExceeded} <= set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_class_names_itself_as_its_name_was_read(cls: type[HostError]) -> None:
    e = cls("why")
    assert "kind" in vars(cls) and "call_kind" in vars(cls)
    assert errors.wire_kind(e) == old_peer_kind(e)
    assert errors.call_kind(e) == old_call_kind(e)
    assert errors.error_class(errors.wire_kind(e)) is cls is old_decoded(old_peer_kind(e))


def test_kinds_are_unique() -> None:
    kinds = [c.kind for c in CLASSES]
    assert len(set(kinds)) == len(kinds)


def test_an_error_class_must_name_its_kind() -> None:
    with pytest.raises(TypeError, match="Unnamed must name its wire kind"):
        class Unnamed(errors.StorageFailed):
            pass


def test_a_class_defined_elsewhere_names_its_old_kind_and_is_read_back_as_a_host_error(
) -> None:
    from wkhost.engine.componentize import BuildError
    from wkhost.events.event import ActorGone
    from wkhost.net.bodies import SlowClient
    from wkhost.net.preflight import UsageError

    old_names = {ActorGone: "_Gone", BuildError: "BuildError", SlowClient: "SlowClient",
                 UsageError: "UsageError"}
    for cls, old in old_names.items():
        e = cls("why")
        assert (errors.wire_kind(e), errors.call_kind(e)) == (old, "error")
        assert errors.error_class(old) is HostError


@pytest.mark.parametrize("name", ["Nothing", "annotations", "wire_kind", ""])
def test_an_unknown_kind_reads_back_as_a_host_error(name: str) -> None:
    assert errors.error_class(name) is HostError is old_decoded(name)


def test_what_is_not_a_host_error_is_named_by_its_class() -> None:
    assert errors.wire_kind(ValueError("x")) == "ValueError"
    assert errors.call_kind(ValueError("x")) == "error"
