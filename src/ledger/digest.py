"""The checkpoint digest: the one implementation, used by the writer and by replay alike.

sha256 over the canonical encoding of a message sequence: each message encoded by the
deterministic encoder (keys in a fixed order, defaults omitted) followed by ``\\n``. Reasoning is
part of a message and so part of the digest; ``is_anchored`` and ``truncation_marker`` are the
framework's bookkeeping and are left out (ADR 0007).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Final

import msgspec

from ledger.messages import Message

__all__ = ["DIGEST_PREFIX", "checkpoint_digest"]

DIGEST_PREFIX: Final = "sha256:"

_encoder = msgspec.json.Encoder(order="deterministic")
_replace = msgspec.structs.replace


def checkpoint_digest(messages: Iterable[Message]) -> str:
    """Return ``"sha256:<hex>"`` over the canonical encoding of ``messages``, in order."""
    h = hashlib.sha256()
    buf = bytearray()
    encode_into = _encoder.encode_into
    for m in messages:
        if m.is_anchored or m.truncation_marker is not None:
            m = _replace(m, is_anchored=False, truncation_marker=None)
        # Encoding into one growing buffer and hashing in large pieces is much cheaper than
        # one hashlib call per message.
        encode_into(m, buf, -1)
        buf += b"\n"
        if len(buf) >= 1 << 20:
            h.update(buf)
            buf.clear()
    h.update(buf)
    return DIGEST_PREFIX + h.hexdigest()
