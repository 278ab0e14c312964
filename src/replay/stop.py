"""Stop facts read from the tail of a rollout; their eligibility is in :mod:`replay.eligibility`.

A session stops on its terminal path by writing an ``agent_checkpoint`` and then a ``terminal``
record, so for a session that stopped cleanly both are in the last few kilobytes of the file:
:func:`read_stop_facts` reads the file backwards, block by block, and stops as soon as it has
them. Its cost does not depend on the size of the file (SPEC rule 9). A session killed after a
resume has records after its last checkpoint; the backward scan then skips lines that cannot be
a checkpoint by looking at their first bytes only (every line is encoded with ``{"type":"...``
first), within a bounded scan budget.

"""

from __future__ import annotations

import os
from typing import BinaryIO, Final

import msgspec

from ledger.codec import RecordDecodeError, decode_record
from ledger.framing import BackwardScan
from ledger.records import AgentCheckpoint, StopKind, Terminal
from ledger.sources import ByteSource, BytesSource, FdSource, FileSource
from replay._checks import check_count
from replay._files import open_rollout_fd
from replay._location import is_url

__all__ = [
    "DEFAULT_SCAN_BUDGET",
    "StopFacts",
    "read_stop_facts",
    "stop_facts_from_bytes",
    "stop_facts_from_fd",
    "stop_facts_from_file",
    "stop_facts_from_source",
]

DEFAULT_SCAN_BUDGET: Final = 64 * 1024 * 1024
"""How many bytes the backward scan reads at most before it gives up looking for a checkpoint."""

_FIRST_BLOCK: Final = 16 * 1024
_BLOCK: Final = 64 * 1024
# Lines longer than this are not carried between blocks; only their first bytes are read back
# when they could be a stop record (a checkpoint or terminal line is never that long).
_MAX_CARRY: Final = 1024 * 1024
_PREFIX_LEN: Final = 64
_TYPE_PREFIX: Final = b'{"type":"'
_CHECKPOINT_PREFIX: Final = b'{"type":"agent_checkpoint"'
_TERMINAL_PREFIX: Final = b'{"type":"terminal"'


class StopFacts(msgspec.Struct, frozen=True, gc=False):
    """What the tail of a rollout says about where and how its session stopped.

    ``found`` is true when the file has a stop point: a last checkpoint, or a terminal record
    that ends the file. ``terminal`` is the terminal record that ends the file (``None`` when
    the session was killed: the last record is not a terminal); ``kind``, ``stop_kind`` and
    ``reason`` come from it. ``checkpoint`` is the last checkpoint of the file (the last one
    wins). ``killed`` is true when a stop point exists but the file does not end with a
    terminal record. ``earlier_terminal`` is the terminal record of an earlier run found before
    the last checkpoint-less stretch (a session resumed and then killed). ``records_after`` counts
    the records between the last checkpoint and the end (the terminal record not counted);
    ``damaged_lines`` the unreadable lines met on the way. ``exhausted`` is true when the scan
    budget ran out before a checkpoint was found: an older checkpoint may exist further up.

    A frozen ``msgspec.Struct`` (ADR 0159).
    """

    found: bool
    kind: StopKind | None = None
    stop_kind: str | None = None
    reason: str = ""
    checkpoint: AgentCheckpoint | None = None
    terminal: Terminal | None = None
    killed: bool = False
    earlier_terminal: Terminal | None = None
    records_after: int = 0
    damaged_lines: int = 0
    bytes_scanned: int = 0
    exhausted: bool = False

    @property
    def legacy(self) -> bool:
        """A terminal record without a stop kind (written before stop kinds existed)."""
        return self.terminal is not None and self.terminal.stop_kind is None

    @property
    def unknown_kind(self) -> bool:
        """A terminal record whose stop kind this library does not know."""
        return (
            self.terminal is not None and self.terminal.stop_kind is not None and self.kind is None
        )

    def describe(self) -> str:
        """A short human sentence: the stop kind, or why it is unknown."""
        if not self.found:
            if self.exhausted:
                return "unknown: no stop record in the part of the file scanned"
            return "unknown: no checkpoint or terminal record"
        if self.killed:
            return "killed after its last checkpoint (no terminal record)"
        if self.legacy:
            return "stopped (legacy record without a stop kind)"
        if self.unknown_kind:
            return f"stopped with unknown kind {self.stop_kind!r}"
        return str(self.stop_kind)


def read_stop_facts(
    path: str | os.PathLike[str], *, scan_budget: int = DEFAULT_SCAN_BUDGET
) -> StopFacts:
    """Read the stop facts of the rollout at ``path`` from its tail only.

    Never raises for a file without stop records (``found=False``); raises ``OSError`` when the
    file cannot be read, :class:`~replay.NotARegularFileError` (an ``OSError``) at once when
    ``path`` is not a regular file. ``path`` may be the URL of an object (``s3://...``): its
    tail is then read by ranged requests.
    """
    check_count("scan_budget", scan_budget)
    if is_url(path):
        from replay.fleet._objects import object_stop_facts

        return object_stop_facts(os.fspath(path), scan_budget=scan_budget)
    fd = open_rollout_fd(path)
    try:
        return stop_facts_from_fd(fd, os.fstat(fd).st_size, scan_budget=scan_budget)
    finally:
        os.close(fd)


def stop_facts_from_file(
    f: BinaryIO, size: int, *, scan_budget: int = DEFAULT_SCAN_BUDGET
) -> StopFacts:
    """Stop facts of an open binary rollout of ``size`` bytes (the listing reuses its handle)."""
    return stop_facts_from_source(FileSource(f), end=size, scan_budget=scan_budget)


def stop_facts_from_fd(fd: int, size: int, *, scan_budget: int = DEFAULT_SCAN_BUDGET) -> StopFacts:
    """Stop facts of a rollout open as the file descriptor ``fd`` (positional reads only)."""
    return stop_facts_from_source(FdSource(fd), end=size, scan_budget=scan_budget)


def stop_facts_from_bytes(data: bytes, *, scan_budget: int = DEFAULT_SCAN_BUDGET) -> StopFacts:
    """Stop facts of a whole rollout already in memory (the listing reads small files whole)."""
    return stop_facts_from_source(BytesSource(data), end=len(data), scan_budget=scan_budget)


def stop_facts_from_source(
    source: ByteSource, *, end: int | None = None, scan_budget: int = DEFAULT_SCAN_BUDGET
) -> StopFacts:
    """Stop facts of the rollout held by any byte source, read back from ``end`` (by default
    its size): a local file, bytes, or an object read by ranges."""
    scan = BackwardScan(
        source,
        end=end,
        budget=scan_budget,
        first_block=_FIRST_BLOCK,
        block=_BLOCK,
        max_carry=_MAX_CARRY,
    )
    return _stop_facts(scan)


def _stop_facts(scan: BackwardScan) -> StopFacts:
    terminal: Terminal | None = None
    earlier_terminal: Terminal | None = None
    checkpoint: AgentCheckpoint | None = None
    at_end = True
    killed = False
    records_after = 0
    damaged = 0
    for start, end, data in scan.lines():
        if at_end:
            # The last whole record decides how the file ends, whatever its type; damaged
            # lines (a torn tail) are skipped as the forward reader skips them. Only here is a
            # long line read whole, to tell a torn write from a whole record.
            if data is None:
                data = scan.read(start, end - start)
            stripped = data.strip()
            if not stripped:
                continue
            try:
                record = decode_record(stripped)
            except RecordDecodeError:
                damaged += 1
                continue
            at_end = False
            if isinstance(record, Terminal):
                terminal = record
            elif isinstance(record, AgentCheckpoint):
                checkpoint = record
                killed = True
                break
            else:
                killed = True
                records_after += 1
            continue
        head = data[:_PREFIX_LEN] if data is not None else scan.read(start, _PREFIX_LEN)
        if not head.strip():
            continue
        if not _could_be_stop(head):
            records_after += 1
            continue
        if data is None:
            data = scan.read(start, end - start)
        try:
            record = decode_record(data.strip())
        except RecordDecodeError:
            damaged += 1
            continue
        if isinstance(record, AgentCheckpoint):
            checkpoint = record
            break
        if isinstance(record, Terminal):
            if earlier_terminal is None and killed:
                earlier_terminal = record
            records_after += 1
        else:
            records_after += 1
    found = checkpoint is not None or terminal is not None
    if not found:
        killed = False
        records_after = 0
    return StopFacts(
        found=found,
        kind=terminal.kind if terminal is not None else None,
        stop_kind=terminal.stop_kind if terminal is not None else None,
        reason=terminal.reason if terminal is not None else "",
        checkpoint=checkpoint,
        terminal=terminal,
        killed=killed,
        earlier_terminal=earlier_terminal,
        records_after=records_after,
        damaged_lines=damaged,
        bytes_scanned=scan.scanned,
        exhausted=scan.exhausted and checkpoint is None,
    )


def _could_be_stop(head: bytes) -> bool:
    head = head.lstrip()
    if head.startswith(_TYPE_PREFIX):
        return head.startswith((_CHECKPOINT_PREFIX, _TERMINAL_PREFIX))
    # A line not written by this library's encoder may put "type" elsewhere: decode it.
    return True
