"""Errors that come back from pickling and copying as they were raised (ADR 0161).

Python pickles an exception as its class called again with ``args``. An error whose
``__init__`` takes other arguments than the message it passes on (``InvalidFieldError(where,
given, expected)``, ``ReplayTooLarge(replay, budget)``) cannot be rebuilt that way: a process
pool then breaks on the error a task raised, instead of handing it to the caller. The errors of
the library take :class:`CopiedAsRaised` first among their bases, so that a copy is rebuilt
from its parts without calling ``__init__``.
"""

from __future__ import annotations

from typing import Any, cast

__all__ = ["CopiedAsRaised"]

_OS_FIELDS = ("errno", "strerror", "filename", "filename2")


def _rebuilt(
    cls: type[BaseException],
    args: tuple[Any, ...],
    os_fields: tuple[Any, ...] | None,
    state: dict[str, Any],
) -> BaseException:
    error = cls.__new__(cls, *args)
    error.args = args
    if os_fields is not None:
        # Kept apart from ``args``: an OSError subclass with an __init__ of its own does not
        # parse them (and some set these fields themselves). A field left unset stays unset:
        # set to None, it would change what str() says.
        for name, value in zip(_OS_FIELDS, os_fields, strict=True):
            if value is not None:
                setattr(error, name, value)
    error.__dict__.update(state)
    return error


class CopiedAsRaised:
    """A mixin for an exception class: pickling and copying give the same error back, its
    ``args``, attributes and (for an ``OSError``) system error fields included."""

    def __reduce__(self) -> tuple[Any, ...]:
        error = cast(BaseException, self)  # a mixin of exception classes only
        os_fields = (
            tuple(getattr(error, name) for name in _OS_FIELDS)
            if isinstance(error, OSError)
            else None
        )
        return _rebuilt, (type(error), error.args, os_fields, dict(error.__dict__))
