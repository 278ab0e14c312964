"""The damage corpus: every kind of broken rollout the reader and the reducer must survive.

For each damaged input: no exception escapes (opening the file is the only documented source of
one, an ``OSError``), every damage shows in ``degraded`` with its line, and the checkpoint digest
no longer holds whenever the rebuilt conversation differs from what was written. The campaign
functions return counters so that ``benchmarks/torture.py`` can run them at full size and print
how many inputs were tried.
"""

from __future__ import annotations

import io
import os
from collections import Counter
from datetime import timedelta
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ledger import (
    AgentCheckpoint,
    Degradation,
    DegradationKind,
    Message,
    Role,
    StopKind,
    checkpoint_digest,
    decode_record,
    encode_line,
    rollout_filename,
)
from ledger.reader import iter_batches, iter_entries, iter_file_entries, rebuild
from ledger.reducer import ReplayState, fold_batches, fold_lines
from replay import StopFacts, read_replay
from replay.cli import cli
from replay.replay import replay_from_state
from strategies import (
    FAULT_START,
    fault_conversation,
    fault_rollout_lines,
    unanchored,
)

CONVERSATION = fault_conversation()
LINES = fault_rollout_lines(CONVERSATION)
DATA = b"".join(LINES)
CHECKPOINT_LINE = 9  # 1-based line of the agent_checkpoint in LINES
KNOWN_KINDS = frozenset(StopKind)


def read(data: bytes, *, max_line_bytes: int | None = None) -> ReplayState:
    """Fold ``data`` through the reader and reducer exactly as ``rebuild`` does for a file."""
    kw = {} if max_line_bytes is None else {"max_line_bytes": max_line_bytes}
    return fold_lines(iter_entries(io.BytesIO(data), **kw))


def read_chunked(
    data: bytes, chunk_bytes: int, *, max_line_bytes: int | None = None
) -> ReplayState:
    """Fold ``data`` read in chunks of ``chunk_bytes``, the way ``rebuild`` reads a file."""
    kw = {} if max_line_bytes is None else {"max_line_bytes": max_line_bytes}
    return fold_batches(iter_batches(io.BytesIO(data), chunk_bytes=chunk_bytes, **kw))


def summary(state: ReplayState) -> tuple[object, ...]:
    """What must not depend on how the file was chunked: the conversation and where damage is."""
    return (
        state.meta,
        state.messages,
        state.pending_reasoning,
        state.checkpoint,
        state.at_checkpoint,
        state.terminal,
        tuple((d.kind, d.line) for d in state.degraded),
    )


def digest_holds(state: ReplayState) -> bool:
    """Whether the last checkpoint's digest matches the conversation rebuilt up to it."""
    cp = state.checkpoint
    return cp is not None and checkpoint_digest(state.at_checkpoint) == cp.digest


def verified(state: ReplayState) -> bool:
    """What replay's verification says of ``state`` (the product's verdict, not this test's)."""
    return replay_from_state(state, Path("x.jsonl"), stop=StopFacts(found=False)).verified


def kinds(state: ReplayState) -> list[DegradationKind]:
    """The kinds of the degradations of ``state``, in order."""
    return [d.kind for d in state.degraded]


def assert_lines_named(state: ReplayState, nlines: int) -> None:
    """Every degradation names a line of the input."""
    for d in state.degraded:
        assert d.line is not None, d
        assert 1 <= d.line <= max(nlines, 1), d


def with_seq(line: bytes, seq: int) -> bytes:
    """The same record line renumbered to ``seq``."""
    record = decode_record(line)
    return encode_line(msgspec.structs.replace(record, seq=seq))  # type: ignore[type-var]


def renumbered(lines: list[bytes]) -> list[bytes]:
    """Lines renumbered 1, 2, ... as one writer would have numbered them."""
    return [with_seq(line, i) for i, line in enumerate(lines, 1)]


# --- campaigns (also run at full size by benchmarks/torture.py) ----------------------------


def truncation_campaign(lines: list[bytes]) -> Counter[str]:
    """Cut the rollout at every byte; each prefix reads to exactly its complete records."""
    data = b"".join(lines)
    ends = []
    pos = 0
    for line in lines:
        pos += len(line)
        ends.append(pos)
    prefixes = [read(b"".join(lines[:k])) for k in range(len(lines) + 1)]
    checkpoint_at = next(
        i for i, line in enumerate(lines, 1) if isinstance(decode_record(line), AgentCheckpoint)
    )
    counts: Counter[str] = Counter()
    for n in range(len(data) + 1):
        state = read(data[:n])
        complete = sum(1 for e in ends if e <= n)
        partial = data[ends[complete - 1] if complete else 0 : n]
        counts["inputs"] += 1
        if partial and partial == lines[complete][:-1]:
            # Only the line end is missing: the record is whole and reads as itself.
            expected, torn = prefixes[complete + 1], False
        else:
            expected, torn = prefixes[complete], bool(partial)
        assert state.messages == expected.messages, n
        assert state.pending_reasoning == expected.pending_reasoning, n
        if torn:
            counts["torn"] += 1
            assert kinds(state) == [DegradationKind.TORN_TAIL], n
            assert state.degraded[0].line == complete + 1, n
        else:
            assert state.degraded == (), n
        assert (state.checkpoint is not None) == (expected.checkpoint is not None), n
        assert digest_holds(state) == (expected.checkpoint is not None), n
        if complete >= checkpoint_at:
            assert digest_holds(state), n
    return counts


def bitflip_campaign(lines: list[bytes], positions: range | None = None) -> Counter[str]:
    """Flip every bit of the rollout, one at a time; no flip changes the conversation silently.

    A flip either shows in ``degraded`` (with a line), breaks the checkpoint digest, or leaves
    the conversation as written (it hit a timestamp, a reason, a field of the session_meta...).
    It never turns one known stop kind into another.
    """
    data = b"".join(lines)
    original = read(data)
    assert original.degraded == ()
    assert digest_holds(original)
    want = unanchored(original.messages)
    kind = original.terminal.kind if original.terminal else None
    nlines = len(lines)
    counts: Counter[str] = Counter()
    buf = bytearray(data)
    for i in positions if positions is not None else range(len(data)):
        for bit in range(8):
            buf[i] ^= 1 << bit
            flipped = bytes(buf)
            buf[i] ^= 1 << bit
            state = read(flipped)
            counts["inputs"] += 1
            assert_lines_named(state, nlines + 1)
            same = unanchored(state.messages) == want and not state.pending_reasoning
            holds = digest_holds(state)
            if state.degraded:
                counts["shown in degraded"] += 1
            elif not holds:
                counts["caught by the digest"] += 1
            else:
                assert same, f"byte {i} bit {bit}: the conversation changed silently"
                counts["harmless"] += 1
            if holds and not same:
                # The digest held over a different conversation: only possible when the
                # checkpoint itself moved, and that shows in degraded.
                assert state.degraded, (i, bit)
            # Replay's verdict: verified only when the conversation is exactly what was written.
            if verified(state):
                counts["verified"] += 1
                assert same, f"byte {i} bit {bit}: verified over a different conversation"
                assert state.checkpoint is not None
                assert state.checkpoint.message_count == len(state.at_checkpoint)
            elif not state.degraded and holds:
                counts["verification refused (count or records after it)"] += 1
            new_kind = state.terminal.kind if state.terminal else None
            assert new_kind in (kind, None), f"byte {i} bit {bit}: {kind} became {new_kind}"
            if state.terminal is not None and state.terminal.stop_kind is None:
                counts["stop kind lost (reads as legacy)"] += 1
    return counts


# --- truncation and bit flips ---------------------------------------------------------------


def test_every_truncation_point_reads_its_complete_records() -> None:
    """Each prefix of a rollout reads to exactly its complete records plus at most a torn tail."""
    counts = truncation_campaign(LINES)
    assert counts["inputs"] == len(DATA) + 1
    assert counts["torn"] > 0


def test_every_truncation_point_of_a_crlf_rollout() -> None:
    """Truncating a rollout written with CRLF line ends behaves like the LF one."""
    lines = [line[:-1] + b"\r\n" for line in LINES]
    data = b"".join(lines)
    for n in range(len(data) + 1):
        state = read(data[:n])
        assert all(k == DegradationKind.TORN_TAIL for k in kinds(state)), n
        assert len(state.degraded) <= 1


def test_every_single_bit_flip_is_shown_caught_or_harmless() -> None:
    """No single-bit flip anywhere in a rollout changes the conversation without a trace."""
    counts = bitflip_campaign(LINES)
    assert counts["inputs"] == 8 * len(DATA)
    assert counts["shown in degraded"] > 0
    assert counts["caught by the digest"] > 0


def test_truncated_files_read_from_disk_like_bytes(tmp_path: Path) -> None:
    """Reading a truncated file from disk gives the same state as reading its bytes."""
    path = tmp_path / "r.jsonl"
    for n in (0, 1, len(LINES[0]), len(DATA) // 2, len(DATA) - 1, len(DATA)):
        path.write_bytes(DATA[:n])
        assert rebuild(path) == read(DATA[:n])


# --- encodings and line ends ----------------------------------------------------------------


def test_bom_on_the_first_line_is_accepted() -> None:
    """A UTF-8 BOM before the first record is skipped without damage."""
    state = read(b"\xef\xbb\xbf" + DATA)
    assert state.degraded == ()
    assert digest_holds(state)


def test_bom_on_a_later_line_is_damage_with_its_line() -> None:
    """A BOM in front of a later record makes that line unparseable, reported at its line."""
    lines = list(LINES)
    lines[2] = b"\xef\xbb\xbf" + lines[2]
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.UNPARSEABLE_LINE]
    assert state.degraded[0].line == 3
    assert not digest_holds(state)


def test_double_bom_is_damage() -> None:
    """Two BOMs before the first record are damage, not silently accepted."""
    state = read(b"\xef\xbb\xbf\xef\xbb\xbf" + DATA)
    assert state.degraded
    assert state.degraded[0].line == 1


def test_crlf_line_ends_are_accepted() -> None:
    """CRLF line ends read exactly like LF."""
    state = read(b"".join(line[:-1] + b"\r\n" for line in LINES))
    assert state.degraded == ()
    assert digest_holds(state)
    assert state == read(DATA)


def test_cr_only_line_ends_are_damage_not_a_crash() -> None:
    """Old-Mac CR line ends make one long unreadable line, reported at line 1."""
    state = read(b"".join(line[:-1] + b"\r" for line in LINES))
    assert len(state.degraded) == 1
    assert state.degraded[0].line == 1
    assert state.messages == ()


@pytest.mark.parametrize(
    "bad",
    [
        b"\xff",
        b"\xc0\xaf",  # overlong encoding of '/'
        b"\xed\xa0\x80",  # an encoded UTF-16 surrogate
        b"\xf4\x90\x80\x80",  # beyond U+10FFFF
        b"\xe2\x82",  # truncated sequence
    ],
)
def test_invalid_utf8_is_reported_at_its_line(bad: bytes) -> None:
    """Invalid UTF-8 inside a record is an invalid_utf8 degradation at that line."""
    lines = list(LINES)
    lines[2] = lines[2].replace(b"README", b"READ" + bad)
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.INVALID_UTF8]
    assert state.degraded[0].line == 3
    assert not digest_holds(state)


def test_escaped_lone_surrogate_is_damage() -> None:
    """A JSON escape of a lone surrogate (not encodable as UTF-8) is refused as damage."""
    lines = list(LINES)
    lines[2] = lines[2].replace(b"README", b"\\ud800")
    state = read(b"".join(lines))
    assert [d.line for d in state.degraded] == [3]


# --- NUL bytes --------------------------------------------------------------------------------


def test_nul_line_is_damage_with_its_line() -> None:
    """A line of NUL bytes between records is reported at its line and reading goes on."""
    lines = [*LINES[:3], b"\x00" * 16 + b"\n", *LINES[3:]]
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.UNPARSEABLE_LINE]
    assert state.degraded[0].line == 4
    assert digest_holds(state)


def test_zero_filled_tail_is_one_torn_tail() -> None:
    """The zero-filled block some file systems leave after a crash is one torn tail."""
    state = read(DATA + b"\x00" * 4096)
    assert kinds(state) == [DegradationKind.TORN_TAIL]
    assert state.degraded[0].line == len(LINES) + 1
    assert digest_holds(state)


def test_raw_nul_inside_a_string_is_damage() -> None:
    """A raw NUL inside a JSON string (must be escaped) makes the line unparseable."""
    lines = list(LINES)
    lines[2] = lines[2].replace(b"README", b"READ\x00ME")
    state = read(b"".join(lines))
    assert [d.line for d in state.degraded] == [3]
    assert not digest_holds(state)


def test_escaped_nul_is_content_not_damage() -> None:
    """An escaped NUL is ordinary content and round-trips exactly."""
    conv = [Message(role=Role.USER, content="a\x00b")]
    state = read(b"".join(fault_rollout_lines(conv)))
    assert state.degraded == ()
    assert state.messages == tuple(conv)
    assert digest_holds(state)


# --- long lines and deep nesting -----------------------------------------------------------


def test_long_line_is_skipped_with_its_line_and_reading_goes_on() -> None:
    """A line over max_line_bytes is reported at its line; the records after it still read."""
    long = b'{"type":"message","seq":99,"pad":"' + b"x" * 100_000 + b'"}\n'
    lines = [*LINES[:3], long, *LINES[3:]]
    state = read(b"".join(lines), max_line_bytes=1024)
    assert kinds(state) == [DegradationKind.LINE_TOO_LONG]
    assert state.degraded[0].line == 4
    assert str(len(long)) in state.degraded[0].detail
    assert digest_holds(state)


def test_long_torn_tail_is_skipped() -> None:
    """A too-long last line without a line end is reported once, at its line."""
    state = read(DATA + b"y" * 50_000, max_line_bytes=1024)
    assert kinds(state) == [DegradationKind.LINE_TOO_LONG]
    assert state.degraded[0].line == len(LINES) + 1
    assert digest_holds(state)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_line_length_limit_boundary(extra: int) -> None:
    """A line of exactly max_line_bytes (without its line end) reads; one byte more does not."""
    line = LINES[1]
    limit = len(line) - 1 + extra  # len(line) - 1 is the record without "\n"
    state = read(b"".join(LINES), max_line_bytes=limit)
    too_long = [d.line for d in state.degraded if d.kind == DegradationKind.LINE_TOO_LONG]
    if extra < 0:
        assert 2 in too_long
    else:
        assert 2 not in too_long


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    "line",
    [
        _deep(10_000) + b"\n",
        b'{"type":"future","seq":2,"x":' + _deep(10_000) + b"}\n",
        b'{"type":"message","seq":2,"ts":"2026-01-02T03:04:05Z","message":{"role":"user",'
        b'"extra":' + _deep(10_000) + b"}}\n",
        b'{"type":"message","seq":2,"ts":"2026-01-02T03:04:05Z","message":{"role":"user",'
        b'"extra":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}}\n",
    ],
    ids=["array", "unknown-type", "raw-extra", "raw-extra-objects"],
)
def test_deep_nesting_is_a_degradation(line: bytes) -> None:
    """10,000-deep nested JSON is an unparseable line at its line, not a RecursionError."""
    lines = [LINES[0], line, *(with_seq(x, i) for i, x in enumerate(LINES[1:], 3))]
    state = read(b"".join(lines))
    assert [d.line for d in state.degraded] == [2]


# --- records out of place -------------------------------------------------------------------


def test_unknown_record_types_are_reported_and_skipped() -> None:
    """A record of a type this reader does not know is reported at its line, nothing else."""
    unknown = b'{"type":"tool_budget","seq":5,"ts":"2026-01-02T03:04:05Z","left":3}\n'
    known = [with_seq(x, i if i < 5 else i + 1) for i, x in enumerate(LINES, 1)]
    lines = [*known[:4], unknown, *known[4:]]
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.UNKNOWN_RECORD]
    assert state.degraded[0].line == 5
    assert "tool_budget" in state.degraded[0].detail
    assert digest_holds(state)


def test_duplicated_record_is_reported_and_breaks_the_digest() -> None:
    """A message line written twice is a sequence duplicate at the copy, and the digest fails."""
    lines = [*LINES[:3], LINES[2], *LINES[3:]]
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.SEQUENCE_DUPLICATE]
    assert state.degraded[0].line == 4
    assert not digest_holds(state)


def test_missing_record_is_a_gap_and_breaks_the_digest() -> None:
    """A message line that went missing is a sequence gap at the next line, and the digest fails."""
    lines = [*LINES[:2], *LINES[3:]]
    state = read(b"".join(lines))
    assert kinds(state) == [DegradationKind.SEQUENCE_GAP]
    assert state.degraded[0].line == 3
    assert not digest_holds(state)


def test_two_writers_interleaved_are_reported() -> None:
    """Two sessions' lines interleaved in one file show as a repeated meta and duplicates."""
    other = fault_rollout_lines(
        [Message(role=Role.USER, content=f"other {i}") for i in range(7)], session_id="other"
    )
    mixed = [x for pair in zip(LINES, other, strict=True) for x in pair]
    state = read(b"".join(mixed))
    found = kinds(state)
    repeated = [d.line for d in state.degraded if d.kind == DegradationKind.META_REPEATED]
    assert repeated == [2]
    assert DegradationKind.SEQUENCE_DUPLICATE in found
    assert not digest_holds(state)
    assert_lines_named(state, len(mixed))


def test_session_meta_not_first_is_reported() -> None:
    """A session_meta after a message is reported as not first, at its line."""
    lines = [LINES[1], LINES[0], *LINES[2:]]
    state = read(b"".join(lines))
    assert DegradationKind.META_NOT_FIRST in kinds(state)
    line = next(d.line for d in state.degraded if d.kind == DegradationKind.META_NOT_FIRST)
    assert line == 2
    assert state.meta is not None


def test_damage_between_reasoning_and_its_message_is_reported() -> None:
    """Reasoning left without its assistant message by damage is reported, not silently lost."""
    lines = [*LINES[:5], b"garbage\n", LINES[6], *LINES[7:]]  # a tool message after reasoning
    state = read(b"".join(lines))
    found = kinds(state)
    assert DegradationKind.UNPARSEABLE_LINE in found
    assert DegradationKind.ORPHAN_REASONING in found
    assert not digest_holds(state)


@pytest.mark.parametrize(
    "line",
    [
        b"null\n",
        b"[]\n",
        b"42\n",
        b'"message"\n',
        b"{}\n",
        b'{"type":null}\n',
        b'{"type":7,"seq":2}\n',
        b'{"type":"message"}\n',
        b'{"type":"message","seq":"two"}\n',
        b'{"type":"message","seq":2,"ts":"yesterday","message":{"role":"user"}}\n',
        b'{"type":"message","seq":2,"ts":"2026-01-02T03:04:05","message":{"role":"user"}}\n',
        b'{"type":"message","seq":2,"ts":"2026-01-02T03:04:05Z","message":{"role":"robot"}}\n',
        b'{"type":"message","seq":2.5,"ts":"2026-01-02T03:04:05Z","message":{"role":"user"}}\n',
        b'{"type":"message","seq":2,"ts":"2026-01-02T03:04:05Z","message":{"role":"user"}\n',
        b"{" * 3 + b"\n",
        b'{"type":"message",,}\n',
        b"\x1b[2J\x07\n",
    ],
)
def test_malformed_lines_are_reported_at_their_line(line: bytes) -> None:
    """Any line that is not a record is reported at its line and the rest still reads."""
    lines = [LINES[0], line, *LINES[1:]]
    state = read(b"".join(lines))
    assert [d.line for d in state.degraded] == [2]
    assert unanchored(state.messages) == unanchored(CONVERSATION)


def test_huge_and_negative_sequence_numbers_do_not_crash() -> None:
    """Absurd sequence numbers are reported as sequence damage, never a crash."""
    for seq in (0, -1, 2**63, 10**40):
        lines = [*LINES[:2], with_seq(LINES[2], seq), *LINES[3:]]
        state = read(b"".join(lines))
        assert state.degraded, seq
        assert_lines_named(state, len(lines))


# --- the file itself --------------------------------------------------------------------------


def test_empty_and_blank_files_read_as_empty() -> None:
    """An empty file, or one of blank lines, is an empty state without damage."""
    for data in (b"", b"\n", b"\n\n\r\n", b"   \n\t\n"):
        state = read(data)
        assert state.messages == ()
        assert state.degraded == ()


def test_missing_file_and_directory_raise_oserror(tmp_path: Path) -> None:
    """Opening what is not a readable file raises an OSError (the documented exception)."""
    with pytest.raises(FileNotFoundError):
        rebuild(tmp_path / "nope.jsonl")
    with pytest.raises(IsADirectoryError):
        rebuild(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_raises_permission_error(tmp_path: Path) -> None:
    """A file the reader may not open raises PermissionError, not a partial state."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(DATA)
    path.chmod(0)
    with pytest.raises(PermissionError):
        rebuild(path)


def test_iter_file_entries_streams_lazily(tmp_path: Path) -> None:
    """The reader yields as it reads: the first entry comes before the file is read to its end."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(DATA * 50)
    it = iter_file_entries(path)
    line, entry = next(it)
    assert line == 1
    assert not isinstance(entry, Degradation)
    it.close()  # type: ignore[attr-defined]


# --- fuzz -------------------------------------------------------------------------------------


@given(
    st.lists(
        st.one_of(
            st.sampled_from(LINES),
            st.binary(max_size=80),
            st.binary(max_size=80).map(lambda b: b + b"\n"),
            st.sampled_from(LINES).map(lambda x: x[: len(x) // 2]),
        ),
        max_size=20,
    )
)
def test_any_mix_of_records_and_garbage_reads(parts: list[bytes]) -> None:
    """Any mix of records and random bytes reads without an exception; damage names its line."""
    data = b"".join(parts)
    state = read(data, max_line_bytes=256)
    assert_lines_named(state, data.count(b"\n") + 1)


@given(st.data())
def test_any_splice_of_a_rollout_reads(data: st.DataObject) -> None:
    """Deleting, repeating or overwriting any byte range reads without an exception."""
    n = len(DATA)
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    how = data.draw(st.sampled_from(["delete", "repeat", "overwrite"]))
    if how == "delete":
        mutated = DATA[:a] + DATA[b:]
    elif how == "repeat":
        mutated = DATA[:b] + DATA[a:b] + DATA[b:]
    else:
        mutated = DATA[:a] + data.draw(st.binary(min_size=b - a, max_size=b - a)) + DATA[b:]
    state = read(mutated)
    assert_lines_named(state, mutated.count(b"\n") + 1)
    if not state.degraded and digest_holds(state):
        assert unanchored(state.at_checkpoint) == unanchored(CONVERSATION)


# --- the corpus as a whole: chunking must not change what is read ------------------------------


def _swap(lines: list[bytes], i: int, j: int) -> list[bytes]:
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


def damage_corpus() -> list[tuple[str, bytes]]:
    """One input per kind of damage (plus the intact rollout), for properties over all of them."""
    other = fault_rollout_lines(
        [Message(role=Role.USER, content=f"other {i}") for i in range(7)], session_id="other"
    )
    deep = b'{"type":"future","seq":3,"x":' + _deep(10_000) + b"}\n"
    corpus = {
        "intact": DATA,
        "empty": b"",
        "blank lines": b"\n".join(LINES) + b"\n",
        "bom": b"\xef\xbb\xbf" + DATA,
        "bom later": b"".join([*LINES[:2], b"\xef\xbb\xbf" + LINES[2], *LINES[3:]]),
        "crlf": b"".join(x[:-1] + b"\r\n" for x in LINES),
        "cr only": b"".join(x[:-1] + b"\r" for x in LINES),
        "invalid utf-8": b"".join(
            [*LINES[:2], LINES[2].replace(b"README", b"\xff\xfe"), *LINES[3:]]
        ),
        "nul line": b"".join([*LINES[:3], b"\x00" * 9 + b"\n", *LINES[3:]]),
        "nul tail": DATA + b"\x00" * 4096,
        "torn tail": DATA[:-7],
        "long line": b"".join([*LINES[:3], b"z" * 5000 + b"\n", *LINES[3:]]),
        "long tail": DATA + b"z" * 5000,
        "deep nesting": b"".join([*LINES[:2], deep, *LINES[2:]]),
        "unknown type": b"".join(
            [*LINES[:2], b'{"type":"future","seq":3,"ts":"2026-01-02T03:04:05Z"}\n', *LINES[2:]]
        ),
        "duplicate": b"".join([*LINES[:3], LINES[2], *LINES[3:]]),
        "missing": b"".join([*LINES[:2], *LINES[3:]]),
        "interleaved": b"".join(x for pair in zip(LINES, other, strict=True) for x in pair),
        "meta not first": b"".join(_swap(LINES, 0, 1)),
        "reasoning orphaned": b"".join([*LINES[:5], b"garbage\n", *LINES[6:]]),
        "two records on a line": b"".join(
            [LINES[0], LINES[1][:-1] + b" " + LINES[2], b"\n", *LINES[3:]]
        ),
        "two records, CR": b"".join(
            [LINES[0], LINES[1][:-1] + b"\r" + LINES[2], b"\n", *LINES[3:]]
        ),
    }
    return list(corpus.items())


CORPUS = damage_corpus()
CHUNKS = (1, 2, 3, 5, 16, 100, 333, 4096)


def corpus_params() -> list[object]:
    """The corpus as pytest parameters."""
    return [pytest.param(name, data, id=name) for name, data in CORPUS]


@pytest.mark.parametrize(("name", "data"), corpus_params())
def test_chunk_size_does_not_change_what_is_read(name: str, data: bytes) -> None:
    """Every damaged input reads the same whatever the size of the chunks the file is read in."""
    want = summary(read(data, max_line_bytes=2048))
    for chunk in CHUNKS:
        got = summary(read_chunked(data, chunk, max_line_bytes=2048))
        assert got == want, (name, chunk)


@pytest.mark.parametrize(("name", "data"), corpus_params())
def test_every_damaged_input_is_shown_or_intact(name: str, data: bytes) -> None:
    """Each input either reads back the written conversation verified, or shows its damage."""
    state = read(data, max_line_bytes=2048)
    assert_lines_named(state, data.count(b"\n") + 1)
    intact = unanchored(state.at_checkpoint) == unanchored(CONVERSATION) and digest_holds(state)
    if name in {"intact", "empty", "blank lines", "bom", "crlf"}:
        assert state.degraded == ()
        assert intact or name == "empty"
    else:
        assert state.degraded, name


def test_two_records_on_one_line_are_damage() -> None:
    """Two records on one line are one damaged line, even when a blank line follows."""
    for sep in (b" ", b"\r", b""):
        lines = [LINES[0], LINES[1][:-1] + sep + LINES[2], b"\n", *LINES[3:]]
        state = read(b"".join(lines))
        assert [d.line for d in state.degraded][:1] == [2], sep


@pytest.mark.parametrize(("name", "data"), corpus_params())
def test_replay_of_each_damaged_file_lists_its_damage(
    tmp_path: Path, name: str, data: bytes
) -> None:
    """read_replay of each damaged file raises nothing, lists its damage, and verifies truly."""
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(data)
    rep = read_replay(path)
    intact = name in {"intact", "blank lines", "bom", "crlf"}
    assert rep.exact == intact, [str(d) for d in rep.degraded]
    assert (rep.degraded == ()) == intact, [str(d) for d in rep.degraded]
    if rep.verified:
        # Damage the digest does not cover (a torn tail, an unknown record) may remain, but a
        # verified conversation is the one that was written.
        assert rep.messages == tuple(CONVERSATION)
    reader_kinds = {d.kind for d in read(data, max_line_bytes=2048).degraded}
    assert reader_kinds <= {d.kind for d in rep.degraded} | {DegradationKind.LINE_TOO_LONG}


def test_replay_of_every_truncation_is_verified_only_when_whole(tmp_path: Path) -> None:
    """A rollout cut anywhere replays without an exception and verifies only when complete."""
    path = tmp_path / "cut.jsonl"
    checkpoint_end = len(b"".join(LINES[:CHECKPOINT_LINE]))
    for n in range(0, len(DATA) + 1, 7):
        path.write_bytes(DATA[:n])
        rep = read_replay(path)
        assert rep.verified == (n >= checkpoint_end - 1), n
        if not rep.verified:
            assert rep.degraded, n


def test_checkpoint_count_edited_is_caught() -> None:
    """A checkpoint whose message count was edited does not verify, though its digest holds."""
    for count in (b"4", b"6", b"0", b"50"):
        lines = list(LINES)
        lines[CHECKPOINT_LINE - 1] = lines[CHECKPOINT_LINE - 1].replace(
            b'"message_count":5', b'"message_count":' + count
        )
        state = read(b"".join(lines))
        assert digest_holds(state)
        assert not verified(state), count


# --- the command over the corpus ----------------------------------------------------------------


def test_the_command_reads_every_damaged_file_without_a_traceback(tmp_path: Path) -> None:
    """ls, tree, verify, show and replay over a root of damaged files exit 0 or 1, never crash."""
    root = tmp_path / "root"
    root.mkdir()
    paths = []
    for i, (_, data) in enumerate(CORPUS):
        path = root / rollout_filename(FAULT_START + timedelta(seconds=i), f"damaged-{i}")
        path.write_bytes(data)
        paths.append(path)
    runner = CliRunner()
    commands = [
        ["ls", "--json"],
        ["ls"],
        ["tree"],
        ["verify", "--all"],
        ["verify", "--all", "--json"],
    ]
    for path in paths:
        commands += [["verify", str(path)], ["show", str(path)], ["replay", "--json", str(path)]]
    for args in commands:
        result = runner.invoke(cli, ["--root", str(root), *args])
        assert result.exit_code in (0, 1), (args, result.output[-500:])
        if result.exception is not None:
            assert isinstance(result.exception, SystemExit), (args, repr(result.exception))
        assert "Traceback" not in result.output, args


def test_tail_reader_agrees_with_the_fold_at_every_truncation_point() -> None:
    """At every cut of a rollout, read_stop_facts finds the last checkpoint the fold finds."""
    from replay.stop import stop_facts_from_file

    for n in range(len(DATA) + 1):
        data = DATA[:n]
        facts = stop_facts_from_file(io.BytesIO(data), len(data))
        state = read(data)
        assert facts.checkpoint == state.checkpoint, n
        whole = data.removesuffix(b"\n")
        ends_with_terminal = state.terminal is not None and whole.endswith(LINES[-1][:-1])
        assert (facts.terminal is not None) == ends_with_terminal, n


@pytest.mark.parametrize(("name", "data"), CORPUS, ids=[name for name, _ in CORPUS])
def test_tail_reader_agrees_with_the_fold_on_each_damaged_file(name: str, data: bytes) -> None:
    """On each damaged file, read_stop_facts finds the last checkpoint the fold finds."""
    from replay.stop import stop_facts_from_file

    facts = stop_facts_from_file(io.BytesIO(data), len(data))
    state = read(data, max_line_bytes=2048)
    assert facts.checkpoint == state.checkpoint
