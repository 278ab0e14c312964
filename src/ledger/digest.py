"""The checkpoint digest: the one implementation, used by the writer and by replay alike.

sha256 over the canonical encoding of a message sequence: the JSON array of the messages as the
deterministic encoder writes it (fields in definition order, defaults omitted, no whitespace).
Reasoning is part of a message and so part of the digest; ``is_anchored`` and
``truncation_marker`` are the framework's bookkeeping and are left out (ADR 0007).

sha256 has exactly one other use, named here beside it: :func:`file_sha256`, the hash of a
file's bytes, which the retention audit log and an import's provenance record (ADR 0134). It is
never a checkpoint digest, and a checkpoint digest is never computed from bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import BinaryIO, Final

import msgspec

from ledger.messages import Message

__all__ = ["DIGEST_PREFIX", "checkpoint_digest", "file_sha256"]

DIGEST_PREFIX: Final = "sha256:"

_encoder = msgspec.json.Encoder(order="deterministic")
_replace = msgspec.structs.replace
_BATCH = 1024
_FILE_CHUNK = 1 << 20


def checkpoint_digest(messages: Iterable[Message]) -> str:
    """Return ``"sha256:<hex>"`` over the canonical encoding of ``messages``, in order.

    The canonical encoding is the deterministic JSON array of the messages, each with
    ``is_anchored`` and ``truncation_marker`` reset to their defaults (and so omitted).
    """
    h = hashlib.sha256(b"[")
    batch: list[Message] = []
    first = True
    for m in messages:
        if m.is_anchored or m.truncation_marker is not None:
            m = _replace(m, is_anchored=False, truncation_marker=None)
        batch.append(m)
        if len(batch) == _BATCH:
            _feed(h, batch, first)
            first = False
            batch.clear()
    if batch:
        _feed(h, batch, first)
    h.update(b"]")
    return DIGEST_PREFIX + h.hexdigest()


def _feed(h: hashlib._Hash, batch: list[Message], first: bool) -> None:
    # One encoder call per batch of messages costs about half as much as one call per
    # message; the batch's array is spliced into the whole array without its brackets.
    body = memoryview(_encoder.encode(batch))[1:-1]
    if not first:
        h.update(b",")
    h.update(body)


def file_sha256(
    f: BinaryIO | bytes | bytearray | memoryview, *, sink: BinaryIO | None = None
) -> tuple[str, int]:
    """``("sha256:<hex>", size)`` of a file's bytes: given whole, or read from ``f`` to its end,
    1 MiB at a time.

    With ``sink``, every chunk read is also written there, so that a copy and its hash come from
    one read (a move across file systems checks the copy with it). Not a checkpoint digest:
    this hashes bytes, not a conversation.
    """
    if isinstance(f, bytes | bytearray | memoryview):
        return DIGEST_PREFIX + hashlib.sha256(f).hexdigest(), len(f)
    h = hashlib.sha256()
    size = 0
    while chunk := f.read(_FILE_CHUNK):
        h.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return DIGEST_PREFIX + h.hexdigest(), size
