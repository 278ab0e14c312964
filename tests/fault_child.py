"""A child process for the kill -9 campaign: it writes a rollout and says what it has drained.

Usage::

    python fault_child.py create DIRECTORY SEED START [STALL]
    python fault_child.py open PATH SEED START [STALL]

``create`` starts a new rollout in DIRECTORY; ``open`` continues the one at PATH. Either way the
child then appends the messages ``message(SEED, START)``, ``message(SEED, START + 1)``, ... in
bursts, drains (or stops, which drains) after most bursts, and prints one line per step,
flushed, so that a parent that kills it knows what was acknowledged::

    PATH <path>        the rollout file (after create or open)
    ACK <n>            drain returned: messages START .. n-1 are in the file
    DONE               ran out of messages (the parent killed it too late)
    STALLED            (with STALL) the worker is stuck inside a write it has half done

STALL is ``half:N`` or ``line:N``: the first N batch writes of the worker go through (with
``create``, ``N=0`` stalls the write of the session_meta itself), then the next one writes only
part of its batch (``half``: up to the middle of a line; ``line``: up to the end of its first
line, which is a reasoning record whenever the batch has one) and never returns, so that the
parent's kill lands inside a write for certain.

Messages are a pure function of (seed, index), so the parent rebuilds the expected
conversation without talking to the child. Some messages are large and some carry several
reasoning blocks, so that batches are cut mid-message and a kill can land inside a write.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from ledger import Message, Reasoning, ReasoningKind, Role, StopKind, ToolCall
from ledger.testing import stall_writes
from ledger.writer import Durability, RolloutWriter

# Mostly small messages, a few large ones: a write of several MB takes long enough that some
# kills land inside it and tear a line.
_SIZES = (0, 1, 40, 300, 3_000, 40_000, 2_000_000)
_SIZE_WEIGHTS = (20, 20, 100, 100, 40, 10, 1)
_ALPHABET = 'abcdefghij klmnopqrstuvwxyz\n\t"\\{}[]é中文🙂'
LIMIT = 100_000


def _text(rng: random.Random) -> str:
    n = rng.choices(_SIZES, _SIZE_WEIGHTS)[0]
    if n > 1_000:
        # Large text is cheap to build: repeat a random piece.
        piece = "".join(rng.choices(_ALPHABET, k=97))
        return (piece * (n // 97 + 1))[:n]
    return "".join(rng.choices(_ALPHABET, k=n))


def message(seed: int, index: int) -> Message:
    """The ``index``-th message of the conversation of ``seed`` (a pure function)."""
    rng = random.Random(f"{seed}:{index}")  # noqa: S311 - test data, not secrets
    turn = index % 3
    if turn == 0:
        return Message(role=Role.USER, content=f"#{index} {_text(rng)}")
    if turn == 1:
        blocks = tuple(
            Reasoning(
                text=_text(rng),
                signature=f"sig-{index}-{b}",
                kind=rng.choice((ReasoningKind.THINKING, ReasoningKind.SUMMARY)),
            )
            for b in range(rng.choice((0, 1, 2, 3)))
        )
        return Message(
            role=Role.ASSISTANT,
            content=f"#{index} {_text(rng)}",
            reasoning=blocks,
            tool_calls=(ToolCall(id=f"call_{index}", name="shell", arguments=_text(rng)),),
        )
    return Message(role=Role.TOOL, tool_call_id=f"call_{index - 1}", content=_text(rng))


def messages(seed: int, start: int, stop: int) -> list[Message]:
    """Messages ``start`` .. ``stop - 1`` of the conversation of ``seed``."""
    return [message(seed, i) for i in range(start, stop)]


def stall_cut(how: str) -> Callable[[bytes], int]:
    """Where a stalled write stops: mid-line (``half``) or at the end of the batch's first
    reasoning record (``line``), else of its first line."""

    def cut(data: bytes) -> int:
        if how == "line":
            first = data.find(b'{"type":"reasoning"')
            start = first if first >= 0 else 0
            return data.find(b"\n", start) + 1 or len(data) // 2
        nl = data.find(b"\n")
        return max(1, (nl if nl > 0 else len(data)) // 2)

    return cut


def stall(writer: RolloutWriter, how: str, after: int, out: TextIO) -> None:
    """Make the worker's ``after + 1``-th batch write write part of its data, then hang."""
    stalled = stall_writes(writer, after=after, cut=stall_cut(how))

    def report() -> None:
        stalled.wait()
        out.write("STALLED\n")
        out.flush()

    threading.Thread(target=report, daemon=True).start()


def stall_create(how: str, out: TextIO) -> None:
    """Make ``create`` write part of its session_meta line, then hang (a kill inside create)."""
    import ledger.writer_files as writer_module

    real = writer_module.writev_all
    cut = stall_cut(how)

    def write(fd: int, buffers: list[bytes]) -> int:
        data = b"".join(buffers)
        real(fd, [data[: cut(data)]])
        out.write("STALLED\n")
        out.flush()
        threading.Event().wait()
        raise OSError("unreachable")

    writer_module.writev_all = write  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    mode, where, seed_text, start_text, *stall_at = argv
    seed, index = int(seed_text), int(start_text)
    out = sys.stdout
    # Every durability level must survive a kill of the process; without fsync (OS) the loop
    # is faster, so more kills land inside a write.
    durability = (Durability.OS, Durability.BATCH, Durability.DRAIN)[(seed + index) % 3]
    if mode == "create" and stall_at and stall_at[0].endswith(":0"):
        stall_create(stall_at[0].partition(":")[0], out)
        stall_at = []
    if mode == "create":
        writer = RolloutWriter.create(
            where, session_id=f"kill-{seed}", agent_name="victim", durability=durability
        )
    else:
        writer = RolloutWriter.open(where, durability=durability)
    if stall_at:
        how, _, after = stall_at[0].partition(":")
        stall(writer, how, int(after), out)
    out.write(f"PATH {writer.path}\n")
    out.flush()
    rng = random.Random(seed * 7919 + index)  # noqa: S311 - test data, not secrets
    while index < LIMIT:
        for _ in range(rng.randint(1, 40)):
            writer.append(message(seed, index))
            index += 1
        step = rng.random()
        if step < 0.1:
            writer.stop(StopKind.PAUSED, reason=f"pause at {index}")
        elif step < 0.85:
            writer.drain()
        else:
            continue
        out.write(f"ACK {index}\n")
        out.flush()
    writer.close()
    out.write("DONE\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
