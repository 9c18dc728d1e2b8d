"""``model.quick_init``: the values built per message keep everything their frozen dataclass gives
them (parameters, defaults, equality, hashing, refusal to change, ``replace``, ``repr``, pickling)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from spoolq.store import layout as L
from spoolq.store.model import Delivery, Message, OutgoingMessage, SendResult, quick_init


@dataclass(frozen=True)
class Plain:
    a: int
    b: str = "b"
    c: tuple[int, ...] | None = None


@quick_init
@dataclass(frozen=True)
class Quick:
    a: int
    b: str = "b"
    c: tuple[int, ...] | None = None


@quick_init
@dataclass(frozen=True)
class QuickChild(Quick):
    d: float = 1.5  # the names the generated __init__ could use itself are the fields' own
    self: str = "self"


def test_the_same_parameters_as_the_dataclass() -> None:
    def shape(cls: type) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]

    assert shape(Quick) == shape(Plain)
    assert list(inspect.signature(Quick).parameters) == ["a", "b", "c"]
    assert list(inspect.signature(QuickChild).parameters) == ["a", "b", "c", "d", "self"]


@pytest.mark.parametrize(("args", "kwargs"), [((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": (1,)}),
                                              ((3,), {"c": None, "b": ""})])
def test_built_the_same_way(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert repr(quick) == repr(plain).replace("Plain", "Quick")
    assert quick == Quick(*args, **kwargs) and hash(quick) == hash(Quick(*args, **kwargs))
    assert quick != Quick(99)


def test_wrong_calls_fail_as_before() -> None:
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick(1, bogus=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick(1, "b", None, 4)  # type: ignore[call-arg]


def test_still_frozen_replaceable_and_picklable() -> None:
    value = QuickChild(1, d=2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del value.a  # type: ignore[misc]
    assert dataclasses.replace(value, b="z") == QuickChild(1, "z", None, 2.0, "self")
    assert QuickChild(1, self="me").self == "me"
    assert pickle.loads(pickle.dumps(value)) == value


def test_the_values_of_the_store_use_it() -> None:
    message = Message(id="a" * 40, body=b"x", sent_at=1.0, receive_count=1, first_received_at=None, attributes={})
    assert message.group_id is None and message.claimed_until is None
    assert Delivery(message, "r", 2.0) == Delivery(message=message, receipt="r", claimed_until=2.0)
    assert OutgoingMessage(b"x").attributes is None and SendResult("i").duplicate is False
    name = L.parse_claimed(f"{'a' * 40}~1~0~ff~{'0' * 16}")
    assert name == L.ClaimedName("a" * 40, 1, 0, 255, "0" * 16) and name.expires == 255
    for cls in (Message, Delivery, OutgoingMessage, SendResult, L.Ref, L.ReadyName, L.ClaimedName, L.DelayedName):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"


def test_what_it_cannot_do_is_refused() -> None:
    with pytest.raises(TypeError, match="own __init__"):
        @quick_init
        @dataclass(frozen=True)
        class WithFactory:
            a: list[int] = field(default_factory=list)

    with pytest.raises(TypeError, match="own __init__"):
        @quick_init
        @dataclass(frozen=True)
        class WithPostInit:
            a: int

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError, match="own __init__"):
        @quick_init
        @dataclass(frozen=True, kw_only=True)
        class KeywordOnly:  # its parameters could not be given by position
            a: int
