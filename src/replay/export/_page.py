"""What an exported page holds, decided once for both formats: facts, turns, tool exchanges.

The Markdown and HTML writers draw the same :class:`Page`; neither decides what to show. Tool
outputs are paired with their calls by the terminal transcript's own pairing
(:func:`replay.pairing.pair_tool_calls`, per turn), so a page and ``rollout show`` always agree on
which output answers which call and which output is superseded (SPEC rule 12).

Text from the rollout stays raw in the page model; each writer passes every string through
:func:`visible` and its own escaping at the point where it is written, so nothing can bypass
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from hashlib import blake2b
from typing import Final

import attrs

from ledger.damage import Degradation, DegradationKind
from ledger.messages import Message, Reasoning, ToolCall
from replay.display import short_time
from replay.display import visible as _visible
from replay.eligibility import child_without_coordinates, resume_eligibility
from replay.pairing import pair_tool_calls
from replay.replay import Replay
from replay.sessions import SessionEntry

__all__ = [
    "ChildLink",
    "Exchange",
    "Fact",
    "Output",
    "Page",
    "Turn",
    "build_page",
    "export_filename",
    "reasoning_label",
    "visible",
]


def visible(text: str) -> str:
    """``text`` with control, format (bidi, zero-width), separator and lone surrogate code
    points written as escapes (:func:`replay.display.visible`); tab and newline stay."""
    return _visible(text)


_PLAIN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}")


def export_filename(session_id: str, extension: str) -> str:
    """The file name an export of session ``session_id`` gets, so pages can link to each other.

    A plain session id (letters, digits and ``-``) is used as it is (``<id>.<extension>``); any
    other value read from a file becomes ``session-<digest>.<extension>``, so that no value from
    a rollout can make a link leave its directory or run as a URL scheme.
    """
    if _PLAIN_ID.fullmatch(session_id):
        return f"{session_id}.{extension}"
    raw = session_id.encode("utf-8", "surrogatepass")
    return f"session-{blake2b(raw, digest_size=8).hexdigest()}.{extension}"


def reasoning_label(r: Reasoning) -> str:
    """What a reasoning block is, in a few words, for the line that opens it."""
    bits = [str(r.kind)]
    if r.text is not None:
        bits.append(f"{len(r.text)} characters")
    if r.summary:
        bits.append(f"{len(r.summary)} summary part(s)")
    if r.signature is not None:
        bits.append("signed")
    if r.encrypted is not None:
        bits.append(f"opaque payload of {len(r.encrypted)} characters, not shown")
    if r.origin is not None and r.origin.provider is not None:
        bits.append(f"from {r.origin.provider}")
    return f"reasoning ({', '.join(bits)})"


@attrs.frozen
class Fact:
    """One labelled value of the page's header; ``label`` is ours, ``value`` may be hostile."""

    label: str
    value: str
    session_link: bool = False
    code: bool = False


@attrs.frozen
class ChildLink:
    """A delegated child session as the listing sees it (its id, agent and how it stopped)."""

    session_id: str
    agent_name: str | None
    delegation_id: str | None
    stop: str


@attrs.frozen
class Output:
    """One tool message answering a call; only the last of several counts (SPEC rule 12)."""

    number: int
    message: Message
    superseded: bool


@attrs.frozen
class Exchange:
    """A tool call with its outputs beside it and, when it delegated, the child session."""

    anchor: str
    call: ToolCall
    outputs: tuple[Output, ...]
    children: tuple[ChildLink, ...]


@attrs.frozen
class Turn:
    """One message shown in place (tool outputs drawn under their call are not turns)."""

    number: int
    message: Message
    orphan: bool
    exchanges: tuple[Exchange, ...]


@attrs.frozen
class Page:
    """Everything an exported page shows, in the order it shows it."""

    session_id: str | None
    facts: tuple[Fact, ...]
    error_traceback: str | None
    degraded: tuple[Degradation, ...]
    compaction: str | None
    turns: tuple[Turn, ...]
    other_children: tuple[ChildLink, ...]


def _child(e: SessionEntry) -> ChildLink:
    stop = e.stop.describe()
    return ChildLink(
        session_id=e.session_id or "",
        agent_name=e.agent_name,
        delegation_id=e.delegation_id,
        stop=stop,
    )


def _facts(replay: Replay) -> tuple[tuple[Fact, ...], str | None]:
    meta, stop = replay.meta, replay.stop
    facts: list[Fact] = []
    if meta is not None:
        facts.append(Fact("session", meta.session_id, code=True))
        optional = (
            ("agent", meta.agent_name),
            ("model", meta.model),
            ("provider", meta.provider),
            ("working directory", meta.cwd),
            ("project", meta.project),
        )
        facts.append(Fact("started (UTC)", short_time(meta.started_at)))
        facts.extend(
            Fact(label, value, code=True) for label, value in optional if value is not None
        )
        if meta.parent_session_id is not None:
            facts.append(Fact("delegated by session", meta.parent_session_id, session_link=True))
        if meta.delegation_id is not None:
            facts.append(Fact("delegating tool call", meta.delegation_id, code=True))
        if meta.parent_session_id is not None or meta.delegation_id is not None:
            facts.append(
                Fact(
                    "coordinates",
                    "missing: a delegated child without both its parent session id and its "
                    "delegation id cannot be attached back to its parent (not replayable as-is)"
                    if child_without_coordinates(meta)
                    else "complete: this delegated child can be attached back to its parent",
                )
            )
    else:
        facts.append(Fact("session", "unknown: the file has no session_meta record"))
    facts.append(Fact("file", replay.path.name, code=True))
    shown = len(replay.messages)
    count = str(shown) if shown == replay.total_messages else f"{shown} of {replay.total_messages}"
    facts.append(Fact("messages", count))
    if replay.compactions:
        facts.append(Fact("compactions", str(replay.compactions)))
    facts.append(
        Fact(
            "verified",
            "yes: the last checkpoint's digest matches the conversation"
            if replay.verified
            else "no (see what could not be restored exactly)",
        )
    )
    facts.append(Fact("stop", stop.describe()))
    traceback = None
    terminal = stop.terminal
    if terminal is not None:
        facts.append(Fact("stop reason", terminal.reason or "(none given)"))
        if terminal.error is not None:
            err = terminal.error
            facts.append(Fact("error", f"{err.type}: {err.message}" if err.message else err.type))
            traceback = err.traceback
    decision = resume_eligibility(stop, meta=meta)
    facts.append(Fact("resume", ("yes: " if decision.replayable else "no: ") + decision.reason))
    return tuple(facts), traceback


def _compaction_note(replay: Replay) -> str | None:
    if not replay.compactions:
        return None
    line = next(
        (
            d.line
            for d in replay.degraded
            if d.kind == DegradationKind.REBUILT_FROM_COMPACTED and d.line is not None
        ),
        None,
    )
    where = f" (line {line})" if line is not None else ""
    return (
        f"Compacted {replay.compactions} time(s). The conversation below starts from the "
        f"replacement messages of the last compaction{where}; the messages it replaced are in "
        "the rollout, not on this page."
    )


def build_page(replay: Replay, sessions: Iterable[SessionEntry] = ()) -> Page:
    """Decide what the page of ``replay`` shows; ``sessions`` may hold its delegated children.

    Entries of ``sessions`` whose parent session id is this session's are its children; each is
    shown beside the tool call whose id is its delegation id, or in a list of its own when no
    call matches. Other entries are ignored, so a whole listing can be passed.
    """
    sid = replay.session_id
    children = [_child(e) for e in sessions if sid is not None and e.parent_session_id == sid]
    messages = replay.messages
    offset = replay.total_messages - len(messages)
    pairing = pair_tool_calls(messages)
    matched: set[int] = set()
    turns: list[Turn] = []
    for i, m in enumerate(messages):
        if i in pairing.answers:
            continue
        exchanges = []
        seen: set[str] = set()
        for k, call in enumerate(m.tool_calls):
            if call.id in seen:
                continue  # the same id twice in one message is one call
            seen.add(call.id)
            answers = pairing.outputs.get((i, call.id), ())
            outputs = tuple(
                Output(number=offset + j + 1, message=messages[j], superseded=n < len(answers) - 1)
                for n, j in enumerate(answers)
            )
            mine = [c for c, child in enumerate(children) if child.delegation_id == call.id]
            matched.update(mine)
            exchanges.append(
                Exchange(
                    anchor=f"m{offset + i + 1}-call{k + 1}",
                    call=call,
                    outputs=outputs,
                    children=tuple(children[c] for c in mine),
                )
            )
        turns.append(
            Turn(
                number=offset + i + 1,
                message=m,
                orphan=i in pairing.orphans,
                exchanges=tuple(exchanges),
            )
        )
    facts, traceback = _facts(replay)
    return Page(
        session_id=sid,
        facts=facts,
        error_traceback=traceback,
        degraded=replay.degraded,
        compaction=_compaction_note(replay),
        turns=tuple(turns),
        other_children=tuple(c for n, c in enumerate(children) if n not in matched),
    )
