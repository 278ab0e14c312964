"""Checks of the numeric parameters of the public read functions, with errors that name them.

A count (``max_messages``, a limit, a scan budget) is an ``int``, never a ``bool``, a ``float``
or a string: ``max_messages=2.5`` or ``"3"`` is refused rather than truncated or compared. A
budget (``token_budget``) may be any real number, but a NaN or an infinity would turn the
comparison off: they are refused, as are negative values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["check_budget", "check_callable", "check_count"]


def check_count(name: str, value: object, *, minimum: int = 0) -> None:
    """``value`` must be ``None`` or an ``int`` (not a ``bool``) of at least ``minimum``."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, not {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be {minimum} or more, not {value}")


def check_budget(name: str, value: object) -> None:
    """``value`` must be ``None`` or a finite real number (not a ``bool``) of 0 or more."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number or None, not {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value}: pass None for no budget")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, not {value}")


def check_callable(name: str, value: Callable[..., Any] | None) -> None:
    """``value`` must be ``None`` or callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a function or None, not {type(value).__name__}")
