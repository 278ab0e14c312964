"""The default token estimate, over bytes: one rule for a message encoded now and for the
records a file holds for it, so that replay can estimate from what it read (ADR 0068).

A message's estimate is taken over its digest items (ADR 0063: its reasoning blocks' and its own
member as the writer encodes them). ASCII counts one token per :data:`BYTES_PER_TOKEN` bytes;
every non-ASCII character (CJK, emoji, accented letters) counts one token, since BPE tokenizers
rarely merge them; plus :data:`MESSAGE_OVERHEAD_TOKENS`. It is an estimate for budgets, not a
bill.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["BYTES_PER_TOKEN", "MESSAGE_OVERHEAD_TOKENS", "AsciiBlocks", "tokens_of_items"]

BYTES_PER_TOKEN: Final = 4
"""The default estimate's ratio for ASCII text (a common rule of thumb for BPE tokenizers)."""

MESSAGE_OVERHEAD_TOKENS: Final = 4
"""Tokens a chat format spends per message on role and framing, added by the default estimate."""


class AsciiBlocks:
    """Whether an item's bytes are ASCII, asked of the block it was cut from once per block (the
    last block is kept, so the answer never outlives it)."""

    __slots__ = ("_ascii", "_block")

    def __init__(self) -> None:
        self._block: object = None
        self._ascii = False

    def block_of(self, item: bytes | memoryview) -> bool:
        """True when ``item`` was cut from a block of ASCII bytes (the common case: no decode)."""
        block = item.obj if type(item) is memoryview else item
        if block is not self._block:
            self._block = block
            self._ascii = isinstance(block, bytes) and block.isascii()
        return self._ascii

    def __call__(self, item: bytes | memoryview) -> bool:
        if type(item) is bytes:
            return item.isascii()
        block = item.obj  # type: ignore[union-attr]
        if block is not self._block:
            self._block = block
            self._ascii = isinstance(block, bytes) and block.isascii()
        return self._ascii or str(item, "utf-8", "replace").isascii()


def tokens_of_items(items: Sequence[bytes | memoryview], ascii: AsciiBlocks | None = None) -> int:
    """The estimate of one message from its items."""
    size = 0
    chars = 0
    for item in items:
        n = len(item)
        size += n
        if ascii(item) if ascii is not None else bytes(item).isascii():
            chars += n
        else:
            chars += len(str(item, "utf-8", "replace"))
    # Each non-ASCII character takes 2-4 bytes; counting extra bytes / 2 is exact for the BMP
    # (CJK) and close enough elsewhere, without a loop in Python.
    wide = (size - chars + 1) // 2
    return MESSAGE_OVERHEAD_TOKENS + -(-(chars - wide) // BYTES_PER_TOKEN) + wide
