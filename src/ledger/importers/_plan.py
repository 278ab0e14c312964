"""A converted session, ready to write: its identity, provenance, records and stop (ADR 0128).

Converters build a :class:`Plan` from a source file without writing anything; :func:`write_plan`
writes it through :class:`~ledger.RolloutWriter` and only through it, and makes an import
idempotent: a source imported before with the same bytes writes nothing; one that grew is
continued when what was imported is a prefix of what it now holds; one that was rewritten gets
a new rollout.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import msgspec

from ledger.codec import join_message
from ledger.context import with_delegation_id, with_rollout_session_id
from ledger.messages import Message, Reasoning, Role
from ledger.naming import RolloutNameError, parse_rollout_filename
from ledger.reader import iter_file_entries
from ledger.records import (
    DESCRIPTION_TYPES,
    Compacted,
    Description,
    MessageRecord,
    MetaUpdate,
    ReasoningRecord,
    SessionMeta,
    StopKind,
)
from ledger.validation_json import check_depth
from ledger.writer import Durability, RolloutWriter

__all__ = ["EPOCH", "Compaction", "Op", "Plan", "RootIndex", "merge_extra", "write_plan"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The time descriptions are built with; the writer stamps its own (``note``)."""

_SAME = "imported before with the same bytes: nothing written"
_HELD = "its rollout already holds everything this source holds: nothing written"
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


@attrs.frozen
class Compaction:
    """A ``compacted`` record to write: the replacement messages, summary and extra."""

    messages: tuple[Message, ...]
    summary: str | None = None
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


Op = Message | Compaction | Description


@attrs.frozen
class Plan:
    """One session converted from a source file, not yet written."""

    session_id: str
    agent_name: str | None
    parent_session_id: str | None
    delegation_id: str | None
    meta: dict[str, Any]
    provenance: dict[str, Any]
    ops: tuple[Op, ...]
    stop: StopKind
    reason: str


def merge_extra(extra: msgspec.Raw | msgspec.UnsetType, key: str, value: Any) -> msgspec.Raw:
    """``extra`` with ``{key: value}`` added, the keys already there kept in their order."""
    held = {} if extra is msgspec.UNSET else _decode(bytes(extra))
    if not isinstance(held, dict):
        held = {"extra": held}
    held[key] = value
    return checked_raw(held)


def checked_raw(value: Any) -> msgspec.Raw:
    """``value`` as raw JSON for an ``extra``, refused (``InvalidFieldError``, which fails the
    one source line it came from) when the reader could not take it back: values put in place
    by a copy skip the constructors' checks (ADR 0160)."""
    return check_depth(msgspec.Raw(_encode(value)), "extra")


class RootIndex:
    """The rollouts already in the destination, by session id (from their file names)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: dict[str, Path] = {}
        if root.is_dir():
            for entry in os.scandir(root):
                if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    sid = parse_rollout_filename(entry.name).session_id
                except RolloutNameError:
                    continue
                if sid is not None:
                    self.paths.setdefault(sid, Path(entry.path))

    def add(self, session_id: str, path: Path) -> None:
        """Remember a rollout written during this import."""
        self.paths[session_id] = path


@attrs.frozen
class Written:
    """What :func:`write_plan` did."""

    status: str
    path: Path | None
    session_id: str
    note: str = ""


def write_plan(plan: Plan, index: RootIndex, *, dry_run: bool) -> Written:
    """Write ``plan`` as a rollout under the index's root, or say why nothing was needed."""
    existing = index.paths.get(plan.session_id)
    if existing is not None:
        shas, ops = _read_existing(existing)
        if plan.provenance["sha256"] in shas:
            return Written("unchanged", existing, plan.session_id, _SAME)
        if _is_prefix(list(plan.ops), tuple(ops)):
            return Written("unchanged", existing, plan.session_id, _HELD)
        if shas and _is_prefix(ops, plan.ops):
            if not dry_run:
                with RolloutWriter.open(existing, durability=Durability.OS) as w:
                    _write_ops(w, plan.ops[len(ops) :])
                    w.note(MetaUpdate(seq=0, ts=EPOCH, extra=_raw({"import": plan.provenance})))
                    w.stop(plan.stop, plan.reason)
            return Written("appended", existing, plan.session_id)
        sid = f"{plan.session_id}~{plan.provenance['sha256'][:12]}"
        if sid in index.paths:
            return Written("unchanged", index.paths[sid], sid, _SAME)
        return _create(attrs.evolve(plan, session_id=sid), index, dry_run, "reimported")
    return _create(plan, index, dry_run, "imported")


def _create(plan: Plan, index: RootIndex, dry_run: bool, status: str) -> Written:
    if dry_run:
        return Written(status, None, plan.session_id)
    index.root.mkdir(parents=True, exist_ok=True)
    meta = {**plan.meta, "import": plan.provenance}
    # An import can be run again (ADR 0128): it hands its writes to the system and does not
    # wait for the disk, which would cost more than the whole conversion.
    with (
        _coordinates(plan),
        RolloutWriter.create(
            index.root,
            session_id=plan.session_id,
            agent_name=plan.agent_name,
            meta=meta,
            durability=Durability.OS,
        ) as w,
    ):
        _write_ops(w, plan.ops)
        w.stop(plan.stop, plan.reason)
    index.add(plan.session_id, w.path)
    return Written(status, w.path, plan.session_id)


@contextlib.contextmanager
def _coordinates(plan: Plan) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if plan.parent_session_id is not None:
            stack.enter_context(with_rollout_session_id(plan.parent_session_id))
            if plan.delegation_id is not None:
                stack.enter_context(with_delegation_id(plan.delegation_id))
        yield


def _write_ops(w: RolloutWriter, ops: tuple[Op, ...]) -> None:
    for op in ops:
        if isinstance(op, Message):
            w.append(op)
        elif isinstance(op, Compaction):
            w.compacted(op.messages, op.summary, extra=op.extra)
        else:
            w.note(op)


def _raw(value: Any) -> msgspec.Raw:
    return checked_raw(value)


def _read_existing(path: Path) -> tuple[set[str], list[Op]]:
    """The sha256 of every source state imported into a rollout, and its operations."""
    shas: set[str] = set()
    ops: list[Op] = []
    pending: list[Reasoning] = []
    for _, entry in iter_file_entries(path):
        if isinstance(entry, SessionMeta | MetaUpdate) and entry.extra is not msgspec.UNSET:
            held = _decode(bytes(entry.extra))
            if isinstance(held, dict) and isinstance(held.get("import"), dict):
                shas.add(str(held["import"].get("sha256")))
                if isinstance(entry, MetaUpdate):
                    continue
        if isinstance(entry, ReasoningRecord):
            pending.append(entry.reasoning)
        elif isinstance(entry, MessageRecord):
            m = entry.message
            if pending and m.role == Role.ASSISTANT:
                m = join_message(tuple(pending), m)
            pending.clear()
            ops.append(m)
        elif isinstance(entry, Compacted):
            ops.append(Compaction(entry.messages, entry.summary, entry.extra))
        elif isinstance(entry, DESCRIPTION_TYPES):
            ops.append(msgspec.structs.replace(entry, seq=0, ts=EPOCH))
    return shas, ops


def _is_prefix(old: list[Op], new: tuple[Op, ...]) -> bool:
    if len(old) > len(new):
        return False
    return all(_same(a, b) for a, b in zip(old, new, strict=False))


def _same(a: Op, b: Op) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Compaction) and isinstance(b, Compaction):
        return (a.messages, a.summary, _bytes(a.extra)) == (b.messages, b.summary, _bytes(b.extra))
    return _encode(a) == _encode(b)


def _bytes(raw: msgspec.Raw | msgspec.UnsetType) -> bytes | None:
    return None if raw is msgspec.UNSET else bytes(raw)
