"""Residues: what a provider object holds beyond what the ledger types carry, kept exactly.

An adapter turns a provider object (a message, a block, a part, an item) into ledger values,
then builds the object back from those values alone. Whatever differs between the original
and that rebuild is the *residue*: keys the types have no home for (kept verbatim, in their
order), keys the rebuild adds that the original did not have, nested objects that differ, and
the key order. Applying the residue to the rebuild gives the original back, key order included.

The residue is stored as JSON text written in the order it was received: ``ledger.raw_json``
sorts keys, which would lose the order of unknown fields, so it is not used here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard

import msgspec

from ledger.providers._errors import ProviderError
from ledger.validation_json import check_depth
from ledger.validation_scalars import InvalidFieldError

__all__ = [
    "Residue",
    "apply",
    "diff",
    "dumps",
    "read_extra",
    "same",
    "with_extra",
]

Residue = dict[str, Any]
"""``x``: keys kept verbatim; ``a``: keys the rebuild adds that were absent; ``n``: residues
of nested objects; ``l``: residues of the objects of a list, one per element, when the rebuild
gives a list of as many objects; ``k``: the original key order, when the rebuild would give
another."""

_EMPTY: tuple[Any, ...] = (None, [], {})  # a typed key holding one of these holds no data
_ABSENT: Any = object()  # a key the rebuild does not have (None is a value it can hold)


# What json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) builds on
# every call, built once: it holds no state between calls.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` in the order given (never sorted)."""
    return _ENCODER.encode(value)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON text: key order, ``1`` against ``1.0`` and ``true`` against ``1`` count.

    Walked with a stack, not by recursion: a tool input nested hundreds deep is valid JSON.
    """
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if a is b:
            continue
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if list(a) != list(b):
                return False
            pending.extend((v, b[k]) for k, v in a.items())
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif isinstance(a, float):
            if repr(a) != repr(b):  # 0.0 and -0.0 are equal numbers but different text
                return False
        elif a != b:
            return False
    return True


def diff(
    original: Mapping[str, Any], built: Mapping[str, Any], *, typed: tuple[str, ...] = ()
) -> Residue:
    """The residue that turns ``built`` into ``original``; empty when they are the same.

    ``typed`` names the keys the ledger types hold (``"function.arguments"`` for a nested
    one): a value there that the rebuild did not reproduce is a bug of the adapter (its
    rebuild lost data), never something to paper over with a verbatim copy. The residue keeps
    only the spelling there (key order inside, keys the types do not hold inside the objects
    of a list, ``null`` or an empty list against absent), never another value.
    """
    residue: Residue = {}
    kept: dict[str, Any] = {}
    nested: dict[str, Residue] = {}
    lists: dict[str, list[Residue]] = {}
    for key, value in original.items():
        other = built.get(key, _ABSENT)
        # The rebuild mostly hands back the very objects it was given: same() of an object and
        # itself is true without a walk.
        if other is value or (other is not _ABSENT and same(other, value)):
            continue
        if other is _ABSENT:
            other = None
        inner = tuple(t.partition(".")[2] for t in typed if t.startswith(key + "."))
        if isinstance(value, dict) and isinstance(other, dict):
            nested[key] = diff(value, other, typed=inner)
            continue
        # A typed list is held element by element only where its elements' typed keys are named.
        if (
            _objects(value)
            and _objects(other)
            and len(value) == len(other)
            and (key not in typed or inner)
        ):
            lists[key] = [diff(v, o, typed=inner) for v, o in zip(value, other, strict=True)]
            continue
        if key in typed and not any(value is e or value == e for e in _EMPTY):
            raise RuntimeError(f"adapter rebuilt {key!r} as {other!r}, not {value!r}")
        kept[key] = value
    absent = [key for key in built if key not in original]
    if kept:
        residue["x"] = kept
    if absent:
        residue["a"] = absent
    if nested:
        residue["n"] = nested
    if lists:
        residue["l"] = lists
    # With nothing else to apply, the rebuild keeps its own key order.
    if (list(apply(built, residue)) if residue else list(built)) != list(original):
        residue["k"] = list(original)
    return residue


def apply(built: Mapping[str, Any], residue: Residue | None) -> dict[str, Any]:
    """``built`` with ``residue`` applied: the original object, keys in its order."""
    out = dict(built)
    if not residue:
        return out
    for key in residue.get("a", ()):
        out.pop(key, None)
    for key, sub in residue.get("n", {}).items():
        if isinstance(out.get(key), dict):
            out[key] = apply(out[key], sub)
    for key, subs in residue.get("l", {}).items():
        held = out.get(key)
        if _objects(held) and len(held) == len(subs):
            out[key] = [apply(v, sub) for v, sub in zip(held, subs, strict=True)]
    out.update(residue.get("x", {}))
    order = residue.get("k")
    if order is not None:
        out = {key: out[key] for key in order if key in out} | out
    return out


def _objects(value: Any) -> TypeGuard[list[dict[str, Any]]]:
    """A non-empty list of objects (whose differences a list residue can hold)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def read_extra(extra: msgspec.Raw | msgspec.UnsetType, shape: str) -> Residue:
    """This shape's residue from a ledger value's ``extra`` (empty when it has none)."""
    if extra is msgspec.UNSET:
        return {}
    try:
        held = json.loads(bytes(extra))
    except ValueError:
        return {}
    found = held.get(shape) if isinstance(held, dict) else None
    return found if isinstance(found, dict) else {}


def with_extra(residue: Residue, shape: str, path: str) -> msgspec.Raw | msgspec.UnsetType:
    """``{shape: residue}`` as raw JSON text in the order received, or UNSET when empty."""
    if not residue:
        return msgspec.UNSET
    try:
        raw = msgspec.Raw(dumps({shape: residue}).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise ProviderError(path, f"a JSON value ({exc})") from None
    # The values built here skip the constructors' checks (they are copies, ADR 0160): what the
    # reader could not take back (nesting deeper than it goes) is refused now, not at replay.
    try:
        return check_depth(raw, path or "extra")
    except InvalidFieldError as exc:
        raise ProviderError(path, exc.expected) from None
