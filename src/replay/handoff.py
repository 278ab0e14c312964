"""The hand-off report: a concise Markdown summary for starting a fresh session.

Rendered from a :class:`~replay.replay.Replay`, typically the one carried by
:class:`~replay.replay.ReplayTooLarge`, so the file is not read again.

The report seeds a fresh model session, and everything in it that comes from the file (ids,
names, stop reasons, error text, message text, tool arguments, degradation details) is hostile
input: it must never add a section or close the block it sits in (ADR 0042). Every such value
is shown as data: a short value as an inline code span on one line (line breaks and control
characters shown as escapes, the backtick fence longer than any run of backticks inside), a
long text as a fenced block whose fence is longer than any run of backticks inside. Only the
fixed headings below are headings.
"""

from __future__ import annotations

import re
from typing import Final

from ledger.messages import Message, Role
from replay._checks import check_count
from replay.display import visible
from replay.eligibility import resume_eligibility
from replay.pairing import pair_tool_calls
from replay.replay import Replay

__all__ = ["HEADINGS", "handoff_report"]

HEADINGS: Final = ("Goal", "Recent turns", "Open tool calls", "Degradations")
"""The second-level headings of every report, in order (the second one also says how many)."""

_GOAL_CHARS: Final = 2000
_TURN_CHARS: Final = 400
_BACKTICKS: Final = re.compile(r"`+")


def _visible(text: str, *, keep_newlines: bool) -> str:
    """``text`` with every unsafe character shown as an escape (tab and, if kept, newline too)."""
    return visible(text, keep_newlines=keep_newlines)


def _fence_for(text: str, minimum: int) -> str:
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    return "`" * max(minimum, longest + 1)


def _code(value: object, limit: int = _TURN_CHARS) -> str:
    """``value`` as an inline code span on one line, whatever it holds."""
    text = _visible(str(value), keep_newlines=False)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    fence = _fence_for(text, 1)
    # A space on each side is stripped by the renderer; it keeps a backtick at either end of
    # the value from joining the fence.
    return f"{fence} {text} {fence}"


def _fenced(text: str, limit: int) -> list[str]:
    """``text`` as a fenced block that nothing inside can close, with a note when cut."""
    text = _visible(text.strip("\n"), keep_newlines=True)
    more = len(text) - limit
    if more > 0:
        text = text[:limit]
    fence = _fence_for(text, 3)
    lines = [f"{fence}text", *text.split("\n"), fence]
    if more > 0:
        lines.append(f"({more} more characters not shown)")
    return lines


def _summary(m: Message) -> str:
    parts = []
    text = m.text()
    if text:
        parts.append(_code(" ".join(text.split())))
    if m.tool_calls:
        parts.append(
            "calls " + ", ".join(f"{_code(c.name)} (id {_code(c.id)})" for c in m.tool_calls)
        )
    if m.role == Role.TOOL and m.tool_call_id:
        parts.append(f"output of {_code(m.tool_call_id)}{' (error)' if m.is_error else ''}")
    if m.reasoning:
        parts.append(f"{len(m.reasoning)} reasoning block(s)")
    return "; ".join(parts) or "(empty)"


def handoff_report(replay: Replay, *, recent_turns: int = 8) -> str:
    """Render ``replay`` as Markdown: goal, state, recent turns, open tool calls, degradations.

    The headings are ``# Hand-off: ...`` and then :data:`HEADINGS`, always, in that order; text
    from the file can neither add one nor remove one.
    """
    check_count("recent_turns", recent_turns)
    meta = replay.meta
    sid = _code(meta.session_id) if meta is not None else "(unknown session)"
    agent = f" (agent {_code(meta.agent_name)})" if meta is not None and meta.agent_name else ""
    stop = replay.stop
    decision = resume_eligibility(stop, meta=meta)
    lines = [f"# Hand-off: session {sid}{agent}", ""]
    lines.append(f"- File: {_code(replay.path.name)}")
    if meta is not None:
        lines.append(f"- Started: {_code(meta.started_at.isoformat())}")
        if meta.parent_session_id or meta.delegation_id:
            lines.append(
                f"- Delegated by session {_code(meta.parent_session_id or '(missing)')}, "
                f"call {_code(meta.delegation_id or '(missing)')}"
            )
    lines.append(f"- Stop: {_code(stop.describe())}")
    if stop.reason:
        lines.append(f"- Stop reason: {_code(stop.reason)}")
    if stop.terminal is not None and stop.terminal.error is not None:
        err = stop.terminal.error
        lines.append(f"- Error: {_code(err.type)}: {_code(err.message)}")
    lines.append(f"- Resume: {_code(decision.reason)}")
    lines.append(
        f"- Messages: {replay.total_messages} ({len(replay.messages)} replayed), about "
        f"{replay.estimated_tokens} tokens; "
        + ("verified against its last checkpoint" if replay.verified else "not verified")
    )
    lines += ["", f"## {HEADINGS[0]}", ""]
    goal = next((m for m in replay.messages if m.role == Role.USER), None)
    if goal is None:
        lines.append("(no user message in the replayed conversation)")
    else:
        lines += _fenced(goal.text() or "(no text)", _GOAL_CHARS)
    recent = replay.messages[-recent_turns:] if recent_turns > 0 else ()
    lines += ["", f"## {HEADINGS[1]} (last {len(recent)})", ""]
    if not recent:
        lines.append("(none)")
    for m in recent:
        lines.append(f"- **{m.role.value}**: {_summary(m)}")
    open_calls = pair_tool_calls(replay.messages).open_calls()
    lines += ["", f"## {HEADINGS[2]}", ""]
    if not open_calls:
        lines.append("(none)")
    for _, call in open_calls:
        lines.append(f"- {_code(call.name)} (id {_code(call.id)}): {_code(call.arguments, 200)}")
    lines += ["", f"## {HEADINGS[3]}", ""]
    if not replay.degraded:
        lines.append("(none: restored exactly)" if replay.verified else "(none)")
    for d in replay.degraded:
        where = f"line {d.line}, " if d.line is not None else ""
        lines.append(f"- {where}{d.kind.value}: {_code(d.detail)}")
    return "\n".join(lines) + "\n"
