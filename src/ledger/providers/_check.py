"""Checking a provider object against its documented shape, with the JSON path of any fault.

The shapes are ``msgspec.Struct`` mirrors of the provider types (``_shapes``); unknown keys are
allowed (they are kept verbatim), a wrong type or a missing required key is not. A failure is
raised as one :class:`ProviderError` naming the path from the payload's root (ADR 0101).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ledger.providers._errors import ProviderError
from ledger.validation import InvalidFieldError

__all__ = ["check", "fail", "located", "words"]

_EXPECTED = re.compile(
    r"^Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`(?: - at `\$(?P<at>.*)`)?$"
)
_MISSING = re.compile(
    r"^Object missing required field `(?P<field>[^`]+)`(?: - at `\$(?P<at>.*)`)?$"
)
_OTHER = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<at>.*)`)?$")
_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
    "object": "an object",
    "array": "an array",
}


def words(kinds: str) -> str:
    """``"str | null"`` as ``"a string or null"``."""
    return " or ".join(_WORDS.get(k.strip(), k.strip()) for k in kinds.split("|"))


def fail(path: str, expected: str) -> ProviderError:
    """The error for ``path`` (made here so that every message has one form)."""
    return ProviderError(path, expected)


def check(value: Any, shape: type[Any], path: str) -> Any:
    """``value`` converted to ``shape``; a mismatch raises :class:`ProviderError` at its path."""
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise _translate(str(exc), path) from None


def _join(path: str, sub: str | None) -> str:
    return (path + (sub or "")).lstrip(".") or "request"


def _translate(message: str, path: str) -> ProviderError:
    if m := _EXPECTED.match(message):
        return ProviderError(_join(path, m["at"]), f"{words(m['want'])}, got {words(m['got'])}")
    if m := _MISSING.match(message):
        return ProviderError(
            _join(path, f"{m['at'] or ''}.{m['field']}"), "a value (a required key)"
        )
    m = _OTHER.match(message)
    assert m is not None  # the pattern matches any text
    what = m["what"][:1].lower() + m["what"][1:]
    return ProviderError(_join(path, m["at"]), f"a documented value ({what})")


def located(path: str) -> _Located:
    """Refusals met while converting the object at ``path`` raised as :class:`ProviderError`.

    A value of the documented shape that a ledger type still refuses (a lone surrogate in a
    signature) or nesting deeper than Python can walk would otherwise escape as another
    exception without the path of the fault.
    """
    return _Located(path)


class _Located:
    # A class, not a generator: entered once per message and per turn of every conversion.
    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        path = self.path or "request"
        if isinstance(exc, InvalidFieldError):
            raise ProviderError(path, f"a value the ledger can hold ({exc})") from None
        if isinstance(exc, RecursionError):
            raise ProviderError(
                path, "JSON nested less deeply (Python's recursion limit was reached)"
            ) from None
