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

__all__ = [
    "BYTES_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "UNKNOWN",
    "AsciiBlocks",
    "read_tokens",
    "tokens_of_items",
]

BYTES_PER_TOKEN: Final = 4
"""The default estimate's ratio for ASCII text (a common rule of thumb for BPE tokenizers)."""

MESSAGE_OVERHEAD_TOKENS: Final = 4
"""Tokens a chat format spends per message on role and framing, added by the default estimate."""


UNKNOWN: Final = -1
"""A group's estimate left to be computed from its message: its bytes are not all ASCII."""


class AsciiBlocks:
    """Whether an item's bytes are ASCII, asked of the block it was cut from once per block (the
    last block is kept, so the answer never outlives it)."""

    __slots__ = ("_ascii", "_block")

    def __init__(self) -> None:
        self._block: object = None
        self._ascii = False

    def block_of(self, item: bytes | memoryview) -> bool:
        """True when ``item`` is ASCII because the block it was cut from is (one check per
        block); a copied item is asked itself."""
        if type(item) is not memoryview:
            return item.isascii()  # a copy (a reasoning item kept for its message): itself
        block = item.obj
        if block is not self._block:
            self._block = block
            self._ascii = isinstance(block, bytes) and block.isascii()
        return self._ascii


def read_tokens(items: Sequence[bytes | memoryview], ascii: AsciiBlocks) -> int:
    """The estimate of one message from the items a reader cut, when they are all ASCII (a
    length each); :data:`UNKNOWN` otherwise, so that counting characters is left to the few
    replays that ask for an estimate."""
    size = 0
    for item in items:
        if not ascii.block_of(item):
            return UNKNOWN
        size += len(item)
    return MESSAGE_OVERHEAD_TOKENS + -(-size // BYTES_PER_TOKEN)


def tokens_of_items(items: Sequence[bytes | memoryview]) -> int:
    """The estimate of one message from its items."""
    size = 0
    chars = 0
    for item in items:
        size += len(item)
        chars += len(str(item, "utf-8", "replace"))
    # Each non-ASCII character takes 2-4 bytes; counting extra bytes / 2 is exact for the BMP
    # (CJK) and close enough elsewhere, without a loop in Python.
    wide = (size - chars + 1) // 2
    return MESSAGE_OVERHEAD_TOKENS + -(-(chars - wide) // BYTES_PER_TOKEN) + wide
