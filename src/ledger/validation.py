"""Refusing at the door: every public value type checks its fields when it is constructed.

msgspec checks types when it *decodes*, never when a struct is *constructed*, so a dict where a
``ToolCall`` belongs used to be accepted, written, and lost on the way back (ADR 0017). The
value types therefore use the metaclass :class:`Checked`: calling the class checks (and, for a
few forms, normalises) every field against its annotation before the struct is built, and
raises :class:`InvalidFieldError` naming the field, what was given and what is expected.
Decoding never calls the metaclass, so replay pays nothing for these checks.

Normalisations are limited to forms that mean the same value: a list where a tuple belongs
becomes a tuple, an enum's string value becomes the member.

This module compiles each type's annotations into checks and holds the metaclass that runs
them; the error and the checks of single scalars are in :mod:`ledger.validation_scalars`, the
checks of verbatim JSON in :mod:`ledger.validation_json`, and their public names are exported
here too.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any, Final

import msgspec

from ledger.validation_json import MAX_RAW_DEPTH, check_json_value, check_raw
from ledger.validation_scalars import (
    MISSING,
    Check,
    InvalidFieldError,
    check_bool,
    check_bytes,
    check_int,
    check_none,
    check_text,
    check_unset,
    check_utc,
)

__all__ = [
    "MAX_RAW_DEPTH",
    "MISSING",
    "Checked",
    "InvalidFieldError",
    "check_json_value",
    "check_raw",
    "check_text",
]

_PROVIDER_HINT: Final = (
    "convert a provider's shapes with ledger.providers (openai_chat, openai_responses, "
    "anthropic, gemini: to_ledger / response_to_ledger)"
)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        module = tp.__module__
        if module.startswith("ledger"):
            return f"a ledger.{tp.__name__}"
        return f"a {tp.__name__}"
    return str(tp)


def _compile(tp: Any) -> tuple[Check, str]:
    """A check for values of the annotation ``tp``, and how to name what it takes."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        if base is datetime and any(getattr(m, "tz", None) for m in meta):
            return check_utc, "a UTC datetime"
        return _compile(base)
    if origin in (typing.Union, types.UnionType):
        return _compile_union(typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        item, item_name = _compile(args[0])

        def check_tuple(value: Any, where: str) -> tuple[Any, ...]:
            if type(value) not in (tuple, list):
                hint = _PROVIDER_HINT if isinstance(value, Mapping) else ""
                raise InvalidFieldError(where, value, f"a tuple of {item_name[2:]}", hint)
            # The paths of the items are spelled out only when one is refused: the checks are
            # pure, so the second pass refuses the same item, now with its index.
            try:
                return tuple([item(v, where) for v in value])
            except InvalidFieldError:
                return tuple([item(v, f"{where}[{i}]") for i, v in enumerate(value)])

        return check_tuple, f"a tuple of {item_name[2:]}"
    if tp is str:
        return check_text, "a str"
    if tp is bool:
        return check_bool, "a bool"
    if tp is int:
        return check_int, "an int"
    if tp is bytes:
        return check_bytes, "bytes"
    if tp is msgspec.Raw:
        return check_raw, "raw JSON (msgspec.Raw)"
    if tp is msgspec.UnsetType:
        return check_unset, "msgspec.UNSET"
    if tp is type(None):
        return check_none, "None"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_check(tp), f"a {tp.__name__} ({', '.join(repr(m.value) for m in tp)})"
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _struct_check((tp,)), _type_name(tp)
    raise TypeError(f"no check for the annotation {tp!r}")  # a new field type: add it here


def _compile_union(args: tuple[Any, ...]) -> tuple[Check, str]:
    structs = tuple(a for a in args if isinstance(a, type) and issubclass(a, msgspec.Struct))
    others = [a for a in args if a not in structs]
    checks = [_compile(a) for a in others]
    if structs:
        checks.append((_struct_check(structs), " or ".join(_type_name(s) for s in structs)))
    names = " or ".join(name for _, name in checks)
    none_ok = type(None) in args
    by_kind = {_kind(a): c for a, (c, _) in zip(others, checks, strict=False)}
    # The check each type of value meets, remembered: the kind of a type never changes.
    by_type: dict[type, Check] = {}
    # Values their check takes as they are by their type alone: exactly one of the structs
    # (check_struct), UNSET (the one value of its type), ASCII text (check_text).
    as_is = frozenset(structs) | ({msgspec.UnsetType} if msgspec.UnsetType in args else set())
    text_ok = str in others

    def check_union(value: Any, where: str) -> Any:
        tp = type(value)
        if tp in as_is or (tp is str and text_ok and value.isascii()):
            return value
        return careful(value, where)

    def careful(value: Any, where: str) -> Any:
        if value is None:
            if none_ok:
                return None
            raise InvalidFieldError(where, value, names)
        tp = type(value)
        check = by_type.get(tp)
        if check is None:
            check = by_kind.get("tuple" if tp is list else _kind(tp))
            if check is not None and len(by_type) < 64:  # types made on the fly stay few
                by_type[tp] = check
        if check is not None:
            return check(value, where)
        if structs and isinstance(value, msgspec.Struct):
            return checks[-1][0](value, where)
        if value is msgspec.UNSET and "unset" in by_kind:
            return value
        hint = _PROVIDER_HINT if isinstance(value, Mapping) else ""
        if isinstance(value, Mapping) and "raw" in by_kind:
            hint = "build it with ledger.raw_json(value)"
        raise InvalidFieldError(where, value, names, hint)

    CAREFUL[check_union] = careful
    return check_union, names


CAREFUL: dict[Check, Check] = {}
"""The careful check behind each union check's shortcut (a test pins that both agree)."""


_kinds: dict[Any, str] = {}


def _kind(tp: Any) -> str:
    # Remembered: every union field of every value built asks it of its value's type.
    kind = _kinds.get(tp)
    if kind is None:
        if len(_kinds) > 512:  # types made on the fly must not pile up
            _kinds.clear()
        kind = _kinds[tp] = _kind_of(tp)
    return kind


def _kind_of(tp: Any) -> str:
    if tp is msgspec.UnsetType:
        return "unset"
    if tp is msgspec.Raw:
        return "raw"
    if typing.get_origin(tp) is tuple or tp is tuple:
        return "tuple"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return "str"
    if isinstance(tp, type) and issubclass(tp, str):
        return "str"
    if tp is bool:
        return "bool"
    if isinstance(tp, type) and issubclass(tp, int):
        return "int"
    return getattr(tp, "__name__", str(tp))


def _enum_check(enum: type[Enum]) -> Check:
    values = {m.value: m for m in enum}

    def check_enum(value: Any, where: str) -> Enum:
        if type(value) is enum:
            return value
        member = values.get(value) if isinstance(value, str) else None
        if member is None:
            choices = ", ".join(repr(v) for v in values)
            raise InvalidFieldError(where, value, f"a {enum.__name__} (one of {choices})")
        return member

    return check_enum


def _struct_check(structs: tuple[type, ...]) -> Check:
    names = " or ".join(_type_name(s) for s in structs)

    def check_struct(value: Any, where: str) -> Any:
        # Exactly these types: a subclass could carry fields that the decoder would drop.
        if type(value) not in structs:
            hint = _PROVIDER_HINT if isinstance(value, Mapping) else ""
            raise InvalidFieldError(where, value, names, hint)
        return value

    return check_struct


_Spec = tuple[dict[str, tuple[Check, str]], dict[str, str]]
_specs: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    """The check of every field with the field's name for errors (``Message.role``), and what
    each required field takes."""
    spec = _specs.get(cls)
    if spec is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        checks: dict[str, tuple[Check, str]] = {}
        required: dict[str, str] = {}
        for info in msgspec.structs.fields(cls):
            check, name = _compile(hints[info.name])
            checks[info.name] = (check, f"{cls.__name__}.{info.name}")
            if info.required:
                required[info.name] = name
        spec = (checks, required)
        _specs[cls] = spec
    return spec


def _rebuild(cls: type, fields: dict[str, Any]) -> Any:
    # What a copy or a pickle gives back: the value it was taken from, built without the
    # construction checks, which a value decoded from a file need not pass (a time another
    # writer gave with an offset is read as written, and must copy as it was read).
    return msgspec.StructMeta.__call__(cls, **fields)


def _reduce(self: msgspec.Struct) -> tuple[Any, ...]:
    return _rebuild, (type(self), msgspec.structs.asdict(self))


def _replace(self: msgspec.Struct, /, **changes: Any) -> Any:
    # copy.replace (Python 3.13): the fields given are the caller's and are checked as
    # constructing checks them; the others are kept as they are, as a copy keeps them.
    cls = type(self)
    spec, _ = _specs.get(cls) or _spec(cls)
    _check_fields(cls, spec, changes)
    return _rebuild(cls, {**msgspec.structs.asdict(self), **changes})


def _check_fields(cls: type, spec: dict[str, tuple[Check, str]], fields: dict[str, Any]) -> None:
    """Check (and normalise in place) each field given, as constructing does."""
    for name, value in fields.items():
        found = spec.get(name)
        if found is None:
            raise TypeError(
                f"{cls.__name__}() has no field {name!r}; its fields are {', '.join(spec)}"
            )
        check, where = found
        fields[name] = check(value, where)


class Checked(msgspec.StructMeta):
    """The metaclass of the public value types: constructing one checks every field; a copy
    of one (deep, or by pickling) gives back the value it was taken from, unchecked; a copy
    with changes (``copy.replace``) checks the fields it changes."""

    def __new__(
        mcls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> Checked:
        namespace.setdefault("__reduce__", _reduce)
        namespace.setdefault("__replace__", _replace)
        return super().__new__(mcls, name, bases, namespace, **kwargs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        spec, required = _specs.get(cls) or _spec(cls)
        if args:
            # Keyword-only (SPEC section 4): a positional value would silently meet a keyword for
            # the same field, or fall off the end.
            raise TypeError(
                f"{cls.__name__}() takes keyword arguments only "
                f"({', '.join(f'{n}=...' for n in spec)}); got {len(args)} positional"
            )
        if not required.keys() <= kwargs.keys():
            for name, expected in required.items():
                if name not in kwargs:
                    raise InvalidFieldError(f"{cls.__name__}.{name}", MISSING, expected)
        _check_fields(cls, spec, kwargs)
        return super().__call__(**kwargs)
