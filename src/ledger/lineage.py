"""Forks: where a fork comes from, and the conversation it inherits (ADR 0130).

A fork's file holds only its own records; its ``session_meta`` names the source session, the
record it forked at, and the digest and message count a checkpoint of the source at that record
would carry (:class:`~ledger.records.ForkOrigin`). :func:`fork_origin` makes that origin from the
source file; :func:`read_inherited` reads the conversation back, source by source up a chain of
forks of forks, each file once and only up to its fork point, and checks each against the
digest its fork recorded. What cannot be read or does not match is a degradation naming the
source, never an exception.

Finding a source is a :data:`Locator`'s job: :func:`recorded_locator` follows the path the fork
recorded, then looks beside the fork by id; the read side adds a search of a whole root by id
(``replay.lineage``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import attrs
import msgspec

from ledger.damage import Degradation, DegradationKind
from ledger.messages import Message
from ledger.naming import RolloutNameError, parse_rollout_filename, session_token
from ledger.reader import Batch, iter_batches
from ledger.records import ForkOrigin, SessionMeta
from ledger.reducer import ReplayState, fold_batches
from ledger.writer_errors import ForkError

__all__ = [
    "Inherited",
    "Link",
    "Located",
    "Locator",
    "ForkPlan",
    "fork_origin",
    "names_session",
    "open_source",
    "plan_fork",
    "read_inherited",
    "recorded_locator",
    "state_at",
]


@attrs.frozen
class Located:
    """Where a locator found a source: the file (or the URL of an object), whether it was
    elsewhere than recorded, and how to open it when it is not a local file."""

    path: Path | str
    moved: bool = False
    opener: Callable[[], BinaryIO] | None = attrs.field(default=None, eq=False)


Locator = Callable[[ForkOrigin, Path | str], Located | None]
"""Finds the source of a fork: ``(origin, the fork's file or URL) -> Located | None``."""


@attrs.frozen
class Link:
    """One source read for a fork: its session, its file (``None`` when not found), the record
    the fork took it up to, and how many messages of its own it gave."""

    session_id: str
    path: Path | str | None
    seq: int
    messages: int
    verified: bool
    moved: bool = False


@attrs.frozen
class Inherited:
    """The conversation a fork inherits, the sources it came from (nearest first), and what
    could not be restored exactly."""

    messages: tuple[Message, ...] = ()
    links: tuple[Link, ...] = ()
    degraded: tuple[Degradation, ...] = ()

    @property
    def verified(self) -> bool:
        """Every source was found and matches the digest its fork recorded."""
        return all(link.verified for link in self.links) and not any(
            d.is_damage for d in self.degraded
        )


def names_session(name: str, session_id: str) -> bool:
    """Whether the file name ``name`` is a rollout name of ``session_id`` (names only)."""
    try:
        parsed = parse_rollout_filename(name)
    except RolloutNameError:
        return False
    if parsed.session_id is not None:
        return parsed.session_id == session_id
    try:  # a token cut to fit names its id by digest (ADR 0016)
        return session_token(session_id, parsed.agent_name) == parsed.session_token
    except RolloutNameError:
        return False


def open_source(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a rollout for reading; anything but a regular file is refused before a byte is read
    (a FIFO would block, ``/dev/zero`` never ends)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file: a rollout is a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _until(batches: Iterator[Batch], at: int) -> Iterator[Batch]:
    # Records come in seq order: a batch whose last record is at or before ``at`` is whole.
    for first_line, entries, items in batches:
        if not entries:
            continue
        last = getattr(entries[-1], "seq", None)
        if last is not None and last < at:
            yield first_line, entries, items
            continue
        for i, entry in enumerate(entries):
            seq = getattr(entry, "seq", None)
            if seq is not None and seq >= at:
                end = i + 1 if seq == at else i
                yield first_line, entries[:end], None if items is None else items[:end]
                return
        yield first_line, entries, items


def state_at(f: BinaryIO, at: int | None = None) -> ReplayState:
    """Fold the rollout in ``f`` from its first line through the record ``at`` (the whole file
    when ``None``), reading nothing after it."""
    batches = iter_batches(f)
    return fold_batches(batches if at is None else _until(batches, at))


def fork_origin(
    source: Path, at: int | None, fork_directory: Path
) -> tuple[ForkOrigin, ReplayState]:
    """The origin of a fork of ``source`` at record ``at`` (its last record when ``None``), and
    the source's state there. Raises :class:`~ledger.ForkError` when the source cannot be forked
    there: not a rollout, damaged up to ``at``, or without such a record."""
    if at is not None and (type(at) is not int or at < 1):
        raise ForkError(f"fork(at={at!r}): a record's seq is an int from 1", source)
    try:
        with open_source(source) as f:
            state = state_at(f, at)
    except FileNotFoundError:
        raise ForkError(f"cannot fork {source}: no such file", source) from None
    except OSError as exc:
        raise ForkError(f"cannot fork {source}: {exc.strerror or exc}", source) from None
    where = "" if at is None else f" up to seq {at}"
    if state.meta is None:
        raise ForkError(f"cannot fork {source}: it has no session_meta (not a rollout)", source)
    damage = [d for d in state.degraded if d.is_damage]
    if at is None:
        # The last complete record is the fork point: a line still being written by a live
        # writer (or torn by a killed one) after it is not part of what is forked.
        damage = [d for d in damage if d.kind is not DegradationKind.TORN_TAIL]
    if damage:
        raise ForkError(
            f"cannot fork {source}: it is damaged{where}: {damage[0]}; check it with "
            "`rollout verify`, or fork at an earlier record",
            source,
        )
    last = state.last_seq or 0
    if at is not None and last != at:
        raise ForkError(f"cannot fork {source} at seq {at}: its records end at seq {last}", source)
    origin = ForkOrigin(
        session_id=state.meta.session_id,
        seq=last,
        digest=state.digest(),
        message_count=len(state.messages),
        path=Path(os.path.relpath(source.absolute(), fork_directory.absolute())).as_posix(),
    )
    return origin, state


@attrs.frozen
class ForkPlan:
    """What :meth:`~ledger.RolloutWriter.fork` writes: where, the origin, the agent name, and
    for a copy the inherited conversation with the summary of its compaction."""

    directory: Path
    origin: ForkOrigin
    agent_name: str | None
    copied: tuple[Message, ...] | None = None
    summary: str | None = None


def plan_fork(
    source: Path,
    directory: str | os.PathLike[str] | None,
    *,
    at: int | None,
    copy: bool,
    agent_name: str | None,
    locate: Locator | None,
) -> ForkPlan:
    """Read the source and decide the fork (the writer's half of ADR 0130); raises
    :class:`~ledger.ForkError` when it cannot be made. A copy reads the whole chain of sources
    and needs every one found and verified."""
    target = source.parent if directory is None else Path(directory)
    origin, state = fork_origin(source, at, target)
    assert state.meta is not None  # fork_origin checked the head
    name = agent_name if agent_name is not None else state.meta.agent_name
    if not copy:
        return ForkPlan(directory=target, origin=origin, agent_name=name)
    inherited = Inherited()
    if state.meta.fork is not None and not state.compactions:
        inherited = read_inherited(state.meta, source, locate)
    if not inherited.verified:
        problem = next((d for d in inherited.degraded if d.is_damage), None)
        raise ForkError(
            f"cannot copy the conversation of {source}: {problem}; nothing was written", source
        )
    return ForkPlan(
        directory=target,
        origin=msgspec.structs.replace(origin, copied=True),
        agent_name=name,
        copied=inherited.messages + state.messages,
        summary=f"copied from session {origin.session_id} at seq {origin.seq}",
    )


def recorded_locator(origin: ForkOrigin, fork_path: Path | str) -> Located | None:
    """Find a fork's source where the fork recorded it, else beside the fork by its id.

    The recorded path is followed only when its file name names the source session. Local
    files only: an object's sources are found by the read side (``replay.lineage``).
    """
    if not isinstance(fork_path, Path):
        return None
    base = fork_path.parent
    if origin.path:
        candidate = Path(os.path.normpath(base / origin.path))
        if names_session(candidate.name, origin.session_id) and _is_file(candidate):
            return Located(candidate)
    try:
        names = sorted(e.name for e in os.scandir(base) if e.is_file())
    except OSError:
        return None
    for name in names:
        if names_session(name, origin.session_id):
            return Located(base / name, moved=True)
    return None


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_inherited(meta: SessionMeta, path: Path | str, locate: Locator | None = None) -> Inherited:
    """The conversation the fork at ``path`` (whose head is ``meta``) inherits.

    Reads each source of the chain once, from its first line through its fork point, nearest
    first, and stops at a source that is not itself a fork (or that compacted before the fork
    point: the compaction replaced what came before). Each source's own conversation at the
    fork point must match the digest and message count its fork recorded.
    """
    find = locate or recorded_locator
    parts: list[tuple[Message, ...]] = []
    links: list[Link] = []
    degraded: list[Degradation] = []
    seen = {_identity(path)}
    child_meta, child_path = meta, path
    while child_meta.fork is not None:
        origin = child_meta.fork
        who = f"session {origin.session_id} (forked by {child_meta.session_id} at seq {origin.seq})"
        found = find(origin, child_path)
        if found is None:
            degraded.append(_missing(who, origin))
            links.append(Link(origin.session_id, None, origin.seq, 0, verified=False))
            break
        if _identity(found.path) in seen:
            degraded.append(
                Degradation(
                    kind=DegradationKind.FORK_LINEAGE_LOOP,
                    detail=f"the source {who}, {found.path}, was already read for this fork: "
                    "the chain of fork origins loops (a copied or edited head); stopped there",
                )
            )
            break
        seen.add(_identity(found.path))
        state, problem = _read_source(found, origin)
        if found.moved:
            degraded.append(
                Degradation(
                    kind=DegradationKind.FORK_SOURCE_MOVED,
                    detail=f"the source {who} is not where the fork recorded it "
                    f"({origin.path}); found by its id at {found.path}",
                )
            )
        if problem is not None:
            degraded.append(
                Degradation(
                    kind=DegradationKind.FORK_SOURCE_CHANGED,
                    detail=f"the source {who}, {found.path}, {problem}: the inherited "
                    "conversation is not the one the fork started from",
                )
            )
        own = state.messages if state is not None else ()
        parts.append(own)
        links.append(
            Link(
                origin.session_id,
                found.path,
                origin.seq,
                len(own),
                verified=problem is None,
                moved=found.moved,
            )
        )
        if state is None or state.meta is None or state.compactions:
            break
        child_meta, child_path = state.meta, found.path
    messages = tuple(m for part in reversed(parts) for m in part)
    return Inherited(messages=messages, links=tuple(links), degraded=tuple(degraded))


def _identity(path: Path | str) -> tuple[int, int] | str:
    if not isinstance(path, Path):
        return path  # an object's URL is its identity
    try:
        st = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return (st.st_dev, st.st_ino)


def _missing(who: str, origin: ForkOrigin) -> Degradation:
    where = f" (recorded at {origin.path})" if origin.path else ""
    return Degradation(
        kind=DegradationKind.FORK_SOURCE_MISSING,
        detail=f"the source {who} was not found{where}: the {origin.message_count} inherited "
        "message(s) are missing; restore or move the source under the root (a fork made "
        "with `rollout fork --copy` never needs it)",
    )


def _read_source(found: Located, origin: ForkOrigin) -> tuple[ReplayState | None, str | None]:
    """The source's state at the fork point, and what does not match the origin, if anything."""
    try:
        with found.opener() if found.opener is not None else open_source(found.path) as f:
            state = state_at(f, origin.seq)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if state.meta is None or state.meta.session_id != origin.session_id:
        held = "no session_meta" if state.meta is None else f"session {state.meta.session_id}"
        return state, f"holds {held}"
    if (state.last_seq or 0) < origin.seq:
        return state, f"ends at seq {state.last_seq}, before the fork point"
    if len(state.messages) != origin.message_count:
        return state, (
            f"rebuilds {len(state.messages)} message(s) at the fork point where the fork "
            f"recorded {origin.message_count}"
        )
    if state.digest() != origin.digest:
        return state, "no longer matches the digest the fork recorded at the fork point"
    return state, None
