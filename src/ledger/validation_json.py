"""The checks of the JSON a value type carries verbatim: a ``msgspec.Raw`` must be single-line
JSON the reader takes back (:func:`check_raw`), and a Python value given to
:func:`ledger.raw_json` must come back from JSON as it was given (:func:`check_json_value`).
They stand apart from the scalar checks and from the compilation of annotations in
:mod:`ledger.validation` because they look inside a value (its nesting, its cycles, its numbers
and keys), which no other check does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any, Final

import msgspec

from ledger.validation_scalars import InvalidFieldError, check_text

__all__ = ["MAX_RAW_DEPTH", "check_depth", "check_json_value", "check_raw"]

MAX_RAW_DEPTH: Final = 64
"""The deepest nesting of arrays and objects a verbatim (raw JSON) field may hold. Providers
send far less; the reader's own limit depends on the interpreter's recursion limit and on how
deep the stack already is where it runs (a stop() called from deep inside a framework), and this
one leaves room for both."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_DEPTH_STEP: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def _depth(data: bytes) -> int:
    # Brackets inside strings do not nest; outside them each opener is +1, each closer -1.
    bare = _STRING.sub(b"", data)
    steps = bare.translate(_DEPTH_STEP)
    return max(
        accumulate(1 if b == 1 else -1 for b in steps if b in (1, 0xFF)),
        default=0,
    )


def check_raw(value: object, where: str) -> msgspec.Raw:
    """``value`` if it is a ``msgspec.Raw`` of single-line JSON the reader can read back."""
    if not isinstance(value, msgspec.Raw):
        hint = "build it with ledger.raw_json(value)" if isinstance(value, Mapping | list) else ""
        raise InvalidFieldError(where, value, "raw JSON (msgspec.Raw)", hint)
    text = bytes(value)
    try:
        msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise InvalidFieldError(
            where, value, "valid JSON text", f"{exc}; build it with ledger.raw_json(value)"
        ) from None
    # A line break would split the rollout line in two, and whitespace around the value would
    # not survive decoding (the decoder hands back the value alone).
    if b"\n" in text or b"\r" in text or text != text.strip():
        raise InvalidFieldError(
            where,
            value,
            "single-line JSON text without surrounding whitespace",
            "build it with ledger.raw_json(value)",
        )
    return _check_depth(text, value, where)


def check_depth(value: msgspec.Raw, where: str) -> msgspec.Raw:
    """``value`` if its JSON is nested at most :data:`MAX_RAW_DEPTH` deep: all that
    :func:`check_raw` adds for JSON this library's own encoders wrote (valid, on one line)."""
    return _check_depth(bytes(value), value, where)


def _check_depth(text: bytes, value: msgspec.Raw, where: str) -> msgspec.Raw:
    if text.count(b"[") + text.count(b"{") > MAX_RAW_DEPTH:
        depth = _depth(text)
        if depth > MAX_RAW_DEPTH:
            raise InvalidFieldError(
                where,
                value,
                f"JSON nested at most {MAX_RAW_DEPTH} levels deep",
                f"it is nested {depth} levels deep, more than the reader takes back",
            )
    return value


_JSON_SCALARS: Final = (str, int, float, bool, type(None))


def check_json_value(value: Any, where: str) -> None:
    """Refuse what JSON cannot carry back as given (ADR 0017): anything but dicts with ``str``
    keys, lists, tuples, ``str``, ``int``, finite ``float``, ``bool`` and ``None``; NaN and
    infinities (they would become ``null``); a value that contains itself; nesting deeper than
    :data:`MAX_RAW_DEPTH`. Dict subclasses are read by their real items, as the encoder does."""
    # Depth-first with the containers of the current path, so that a cycle is seen at once.
    stack: list[tuple[Any, str, int, bool]] = [(value, where, 1, False)]
    on_path: list[int] = []
    while stack:
        item, path, depth, leaving = stack.pop()
        if leaving:
            on_path.pop()
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidFieldError(path, item, "a finite number (JSON has no NaN or infinity)")
            continue
        if isinstance(item, _JSON_SCALARS):
            if isinstance(item, str):
                check_text(item, path)
            continue
        if not isinstance(item, dict | list | tuple):
            raise InvalidFieldError(
                path,
                item,
                "a JSON value (dict with str keys, list, str, int, float, bool or None)",
                "convert it first (for example dataclasses.asdict, or a date's isoformat())",
            )
        if id(item) in on_path:
            raise InvalidFieldError(path, item, "a JSON value without cycles", "it contains itself")
        if depth > MAX_RAW_DEPTH:
            raise InvalidFieldError(path, item, f"JSON nested at most {MAX_RAW_DEPTH} levels deep")
        on_path.append(id(item))
        stack.append((item, path, depth, True))
        if isinstance(item, dict):
            for k, v in dict.items(item):
                if not isinstance(k, str):
                    raise InvalidFieldError(f"{path} key", k, "a str key (JSON keys are text)")
                stack.append((v, f"{path}[{k!r}]", depth + 1, False))
        else:
            stack.extend((v, f"{path}[{i}]", depth + 1, False) for i, v in enumerate(item))
