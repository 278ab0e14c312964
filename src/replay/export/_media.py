"""Media parts on a page: an inline raster image only after checking it, a description otherwise.

A page must never fetch anything, so a media part with a URL is described, never loaded or
linked. Inline base64 data becomes a ``data:`` URL only when the declared media type is one of
a few raster image types, the data decodes as strict base64, its first bytes are that type's
signature, and it is not too large; it is then re-encoded, so the URL holds only characters this
module wrote. SVG is never inlined: it is a document that can hold script and links.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from ledger.messages import MediaPart

__all__ = ["MAX_INLINE_IMAGE", "describe_media", "inline_image"]

MAX_INLINE_IMAGE: Final = 8 * 1024 * 1024
"""The largest decoded image put inline in a page (bytes); larger ones are described."""

_SIGNATURES: Final = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
_WHITESPACE: Final = re.compile(rb"[ \t\r\n]+")
_DATA_URL: Final = re.compile(r"data:(?P<type>[^;,]*)(?P<params>(?:;[^;,]*)*),(?P<data>.*)", re.S)


def _media_type(declared: str) -> str:
    return declared.split(";", 1)[0].strip().lower()


def _signed(kind: str, raw: bytes) -> bool:
    if kind == "image/webp" and raw[8:12] != b"WEBP":
        return False
    return any(raw.startswith(sig) for sig in _SIGNATURES[kind])


def _payload(part: MediaPart) -> tuple[str, str] | None:
    """The declared type and base64 text of inline data (``data=``, or a ``data:`` URL)."""
    if part.data is not None:
        return part.media_type, part.data
    url = part.url or ""
    m = _DATA_URL.fullmatch(url) if url[:5].lower() == "data:" else None
    if m is None or ";base64" not in m["params"].lower():
        return None
    if _media_type(m["type"]) != _media_type(part.media_type):
        return None
    return part.media_type, m["data"]


def inline_image(part: MediaPart) -> str | None:
    """A ``data:`` URL for ``part`` when it is a checked raster image, else ``None``."""
    found = _payload(part)
    if found is None:
        return None
    declared, text = found
    kind = _media_type(declared)
    if kind not in _SIGNATURES or not text.isascii():
        return None
    squeezed = _WHITESPACE.sub(b"", text.encode("ascii"))
    if len(squeezed) > (MAX_INLINE_IMAGE // 3 + 1) * 4:
        return None
    try:
        raw = base64.b64decode(squeezed, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw or len(raw) > MAX_INLINE_IMAGE or not _signed(kind, raw):
        return None
    return f"data:{kind};base64,{base64.b64encode(raw).decode('ascii')}"


def describe_media(part: MediaPart) -> str:
    """A sentence saying what a media part is, without loading or linking anything."""
    bits = [f"media {part.media_type}"]
    if part.name is not None:
        bits.append(f"named {part.name}")
    if part.data is not None:
        bits.append(f"inline data of {len(part.data)} base64 characters")
    elif part.url is not None and part.url[:5].lower() == "data:":
        bits.append(f"inline data URL of {len(part.url)} characters")
    elif part.url is not None:
        bits.append(f"at {part.url} (not loaded)")
    return ", ".join(bits)
