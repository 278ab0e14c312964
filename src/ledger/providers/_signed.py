"""Signed and encrypted payloads kept outside the typed fields, and how to take them out.

Typed reasoning, signatures and encrypted content are refused by the adapters when the target
does not accept their origin (ADR 0102). The same payloads also travel untyped: inside opaque
parts and items (a Gemini ``executableCode`` part with its ``thoughtSignature``, a Responses
``compaction`` item) and in fields kept verbatim in a residue (OpenRouter's
``reasoning_details``). :func:`unsigned` takes them out of such a provider object, by the one
table below (ADR 0106).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SIGNED", "SIGNED_TYPES", "LABELS", "CARRIERS", "stripped", "unsigned"]

SIGNED: Final[Mapping[str, tuple[str, bool]]] = {
    # key: (the piece left out, whether the object holding it means nothing without it)
    "thoughtSignature": ("signature", False),  # Gemini parts
    "thought_signature": ("signature", False),  # Gemini in snake case; its Chat extra_content
    "signature": ("signature", False),  # Anthropic thinking, OpenRouter and LiteLLM details
    "encrypted_content": ("encrypted item", True),  # Responses reasoning and compaction items
    "reasoning_details": ("provider field", False),  # OpenRouter Chat messages
    "thinking_blocks": ("provider field", False),  # LiteLLM Chat messages (signed thinking)
}
"""Keys whose value the provider checks against the origin that wrote it."""

SIGNED_TYPES: Final = frozenset({"redacted_thinking", "reasoning.encrypted"})
"""Object types that are nothing but encrypted data under a generic key (``data``)."""

LABELS: Final = frozenset({"type", "id", "index", "format", "status", "thought"})
"""Keys that only name or place a payload: an object left with nothing else is dropped."""

CARRIERS: Final = frozenset({"extra_content"})
"""Keys whose object holds provider metadata, looked into for signed keys (and only these:
tool arguments and other user data are never searched)."""


def unsigned(value: Mapping[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """``value`` without its signed or encrypted payloads, and the pieces taken out.

    ``None`` when nothing meaningful is left: an object of an encrypted type, one whose
    encrypted content was its point, or one left with labels only (a signature-only part).
    """
    if value.get("type") in SIGNED_TYPES:
        return None, ("encrypted item",)
    out, taken, whole = _strip(value, deep=False)
    if whole is not None:
        return None, (whole,)
    if taken and set(out) <= LABELS:
        return None, taken
    return out, taken


def stripped(value: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``value`` without its signed or encrypted keys, never dropped whole (for an object that
    means something on its own: a message, a function call), and the pieces taken out."""
    out, taken, _ = _strip(value, deep=False)
    return out, taken


def _strip(
    value: Mapping[str, Any], *, deep: bool
) -> tuple[dict[str, Any], tuple[str, ...], str | None]:
    # The object without signed keys, the pieces taken, and the piece for which the object
    # goes whole (its encrypted content), if any.
    # Nested objects are looked into only inside a carrier (``deep``), where everything is
    # provider metadata; an object there left empty by the stripping goes too.
    out: dict[str, Any] = {}
    taken: list[str] = []
    whole: str | None = None
    for key, held in value.items():
        if key in SIGNED:
            what, goes = SIGNED[key]
            taken.append(what)
            whole = what if goes and whole is None else whole
        elif isinstance(held, dict) and (deep or key in CARRIERS):
            inner, found, _ = _strip(held, deep=True)
            taken.extend(found)
            if inner or not found:
                out[key] = inner
        else:
            out[key] = held
    return out, tuple(taken), whole
