"""Forks of forks (ADR 0130): any depth replays as the model says, each file read once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as s
from ledger import (
    FORMAT_VERSION,
    DegradationKind,
    ForkOrigin,
    Message,
    RolloutWriter,
    SessionMeta,
    StopKind,
    encode_line,
    rollout_filename,
)
from replay import read_replay
from rollout_files import START


def _grow(
    w: RolloutWriter, model: dict[int, list[Message]], ops: list[s.HistoryOp], start: list[Message]
) -> None:
    """Apply ``ops`` to ``w`` and record, per seq, the conversation the file holds there."""
    current = list(start)
    model[1] = list(current)
    seqs: list[int] = [1] * len(current)  # inherited messages sit at the fork's first record
    for kind, arg in ops:
        if kind == "append":
            # The conversation at one of its reasoning records lacks the message (ADR 0131).
            _record(model, w.next_seq + len(arg.reasoning), current)
            w.append(arg)
            current.append(arg)
            seqs.append(w.next_seq - 1)
        elif kind == "compact":
            w.compacted(arg)
            current, seqs = list(arg), [w.next_seq - 1] * len(arg)
        elif kind == "rewind":
            w.rewind(to=arg)
            keep = sum(1 for q in seqs if q <= arg)
            current, seqs = current[:keep], seqs[:keep]
        else:
            w.stop(StopKind.PAUSED)
        _record(model, w.next_seq, current)
    w.stop(StopKind.PAUSED)
    _record(model, w.next_seq, current)


def _record(model: dict[int, list[Message]], next_seq: int, current: list[Message]) -> None:
    for seq in range(max(model) + 1, next_seq):
        model[seq] = list(current)


@settings(max_examples=15)
@given(data=st.data(), depth=st.integers(min_value=1, max_value=4))
def test_a_chain_of_forks_replays_as_the_model_and_reads_each_file_once(
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    depth: int,
) -> None:
    """A session forked, its fork forked, and so on, each fork at any record of its source and
    each with appends, rewinds and compactions of its own: the last fork replays to the
    conversation the model holds at its end, verified, opening every file exactly once."""
    root = tmp_path_factory.mktemp("chain")
    inherited: list[Message] = []
    path: Path | None = None
    model: dict[int, list[Message]] = {}
    for level in range(depth + 1):
        ops = data.draw(s.history_programs(max_ops=6), label=f"ops {level}")
        if path is None:
            w = RolloutWriter.create(root, session_id=f"s{level}", durability="os")
        else:
            at = data.draw(st.sampled_from(sorted(model)), label=f"fork point {level}")
            inherited = model[at]
            w = RolloutWriter.fork(path, at=at, session_id=f"s{level}", durability="os")
        model = {}
        with w:
            _grow(w, model, ops, inherited)
        path = w.path
    assert path is not None
    opened: list[str] = []
    real_open = os.open

    def counting_open(p: str | os.PathLike[str], *args: object, **kwargs: object) -> int:
        opened.append(os.path.basename(os.fspath(p)))
        return real_open(p, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "open", counting_open)
        rep = read_replay(path)
    assert list(rep.messages) == model[max(model)]
    assert rep.verified, rep.degraded
    assert len(opened) == len(set(opened)), opened


def _head(root: Path, sid: str, source: str, seq: int = 1) -> Path:
    """A rollout that is nothing but a fork's head naming ``source``."""
    meta = SessionMeta(
        seq=1,
        ts=START,
        format_version=FORMAT_VERSION,
        session_id=sid,
        started_at=START,
        fork=ForkOrigin(
            session_id=source,
            seq=seq,
            digest="sha256:" + "0" * 64,
            message_count=0,
            path=rollout_filename(START, source),
        ),
    )
    path = root / rollout_filename(START, sid)
    path.write_bytes(encode_line(meta))
    return path


def test_a_loop_of_fork_origins_ends_with_a_degradation(tmp_path: Path) -> None:
    """Forged heads that name each other as sources: read once each, then reported."""
    _head(tmp_path, "a", "b")
    b = _head(tmp_path, "b", "a")
    rep = read_replay(b)
    kinds = [d.kind for d in rep.degraded]
    assert DegradationKind.FORK_LINEAGE_LOOP in kinds
    assert not rep.verified
