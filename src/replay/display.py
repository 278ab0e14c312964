"""Text read from a rollout, made safe to show: one rule for the terminal, the export and the
hand-off report (ADR 0040).

A rollout is input from anyone. What a reader (a terminal, a Markdown renderer, a browser, a
model's tokenizer) may take for a control or a line break, or that reorders or hides text, is
shown as an escape: C0 and C1 controls and DEL (category Cc), format characters such as the
bidirectional overrides of "Trojan Source" and zero-width characters (Cf), the Unicode line and
paragraph separators (Zl, Zp) and lone surrogates (Cs). Tab and newline stay unless asked.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "UNSAFE_CATEGORIES",
    "escape_char",
    "in_utc",
    "json_visible",
    "short_time",
    "visible",
]

UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""The Unicode categories never shown raw."""

_SAFE_ASCII: Final = frozenset(chr(c) for c in range(0x20, 0x7F))


def escape_char(c: str) -> str:
    """``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` for one character."""
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _unsafe(c: str) -> bool:
    return c not in _SAFE_ASCII and unicodedata.category(c) in UNSAFE_CATEGORIES


def visible(text: str, *, keep_newlines: bool = True, keep_tabs: bool = True) -> str:
    """``text`` with every unsafe character shown as an escape; the result encodes to UTF-8."""
    kept = ("\n" if keep_newlines else "") + ("\t" if keep_tabs else "")
    if text.isascii() and all(c in _SAFE_ASCII or c in kept for c in text if not c.isprintable()):
        return text
    return "".join(escape_char(c) if c not in kept and _unsafe(c) else c for c in text)


def json_visible(json_text: str) -> str:
    """JSON text with every unsafe character it holds raw written as a ``\\u`` escape: the same
    JSON value, safe on a terminal (JSON itself escapes only C0, quote and backslash)."""
    if json_text.isascii() and json_text.isprintable():
        return json_text
    out = []
    for c in json_text:
        if c in _SAFE_ASCII or not _unsafe(c):
            out.append(c)
            continue
        n = ord(c)
        if n >= 0x10000:
            n -= 0x10000
            out.append(f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out)


def in_utc(when: datetime) -> datetime:
    """The same instant in UTC, or ``when`` as given where the calendar has no UTC time for it
    (a time of year 1 east of Greenwich, of year 9999 west of it, which another writer may
    have written and the reader accepts)."""
    try:
        return when.astimezone(UTC)
    except OverflowError:
        return when


def short_time(when: datetime | None) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS`` in UTC (``-`` when unknown), with its own offset after
    it when UTC cannot hold it."""
    if when is None:
        return "-"
    utc = in_utc(when)
    if utc.utcoffset():  # UTC has no time for it: shown as given, offset included
        return utc.isoformat(" ", "seconds")
    return utc.replace(tzinfo=None).isoformat(" ", "seconds")
