"""The refusal every value check raises, :class:`InvalidFieldError`, and the checks of a single
scalar field: text, bool, int, bytes, ``None``, ``UNSET`` and UTC datetimes. They stand apart
from :mod:`ledger.validation`, which compiles a value type's annotations into checks, because
they are the leaves those checks end in and need nothing of it; the JSON checks in
:mod:`ledger.validation_json` build on them too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from ledger.error_copies import CopiedAsRaised

__all__ = [
    "MISSING",
    "Check",
    "InvalidFieldError",
    "check_bool",
    "check_bytes",
    "check_int",
    "check_none",
    "check_text",
    "check_unset",
    "check_utc",
]


class _Missing:
    """The type of :data:`MISSING`: one value, which stays itself when pickled or copied (an
    error that carries it crosses a process boundary as raised, ADR 0161)."""

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""What :attr:`InvalidFieldError.given` is when a required field was not given."""


class InvalidFieldError(CopiedAsRaised, TypeError, ValueError):
    """A value of the wrong type or form was given to a field of a public value type.

    ``where`` is the field's path (``Message.tool_calls[0]``), ``given`` the value given,
    ``expected`` what the field takes. Both a ``TypeError`` and a ``ValueError``, so that
    callers catching either see it.
    """

    def __init__(self, where: str, given: object, expected: str, hint: str = "") -> None:
        self.where = where
        self.given = given
        self.expected = expected
        if given is MISSING:
            message = f"{where}: expected {expected}, got nothing (the field is required)"
        else:
            shown = repr(given)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            message = f"{where}: expected {expected}, got {type(given).__name__} {shown}"
        if hint:
            message += f"; {hint}"
        super().__init__(message)


Check = Callable[[Any, str], Any]


def check_text(value: object, where: str) -> str:
    """``value`` if it is a ``str`` that UTF-8 can carry (no lone surrogate)."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise InvalidFieldError(where, value, "a str")
        value = str.__str__(value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidFieldError(
                where,
                value,
                "text that UTF-8 can carry",
                f"character {exc.start} is a lone surrogate ({value[exc.start]!r})",
            ) from None
    return value


def check_bool(value: Any, where: str) -> bool:
    """``value`` if it is a ``bool`` (not an int standing for one)."""
    if type(value) is not bool:
        raise InvalidFieldError(where, value, "a bool")
    return value


def check_int(value: Any, where: str) -> int:
    """``value`` if it is an ``int`` and not a ``bool``; a subclass gives its plain ``int``."""
    if type(value) is not int:
        if isinstance(value, int) and not isinstance(value, bool):
            return int.__int__(value)  # the value itself, whatever the subclass says it is
        raise InvalidFieldError(where, value, "an int")
    return value


def check_bytes(value: Any, where: str) -> bytes:
    """``value`` if it is ``bytes``."""
    if not isinstance(value, bytes):
        raise InvalidFieldError(where, value, "bytes")
    return value


def check_unset(value: Any, where: str) -> Any:
    """``value`` if it is ``msgspec.UNSET``."""
    if value is not msgspec.UNSET:
        raise InvalidFieldError(where, value, "msgspec.UNSET")
    return value


def check_none(value: Any, where: str) -> None:
    """Nothing, if ``value`` is ``None``."""
    if value is not None:
        raise InvalidFieldError(where, value, "None")


def check_utc(value: Any, where: str) -> datetime:
    """``value`` if it is a ``datetime`` at UTC (an offset of zero)."""
    if not isinstance(value, datetime) or value.utcoffset() != timedelta(0):
        raise InvalidFieldError(
            where, value, "a UTC datetime", "rollout times are UTC, e.g. datetime.now(UTC)"
        )
    return value
