"""The hand-off report: a concise Markdown summary for starting a fresh session.

Rendered from a :class:`~replay.replay.Replay`, typically the one carried by
:class:`~replay.replay.ReplayTooLarge`, so the file is not read again.
"""

from __future__ import annotations

from typing import Final

from ledger.messages import Message, Role
from replay.replay import Replay
from replay.stop import resume_eligibility

__all__ = ["handoff_report"]

_GOAL_CHARS: Final = 2000
_TURN_CHARS: Final = 400


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _block(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[:limit].rstrip() + f"\n\n[... {len(text) - limit} more characters]"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _summary(m: Message) -> str:
    parts = []
    text = m.text()
    if text:
        parts.append(_one_line(text, _TURN_CHARS))
    if m.tool_calls:
        parts.append("calls " + ", ".join(f"`{c.name}` ({c.id})" for c in m.tool_calls))
    if m.role == Role.TOOL and m.tool_call_id:
        parts.append(f"output of {m.tool_call_id}{' (error)' if m.is_error else ''}")
    if m.reasoning:
        parts.append(f"{len(m.reasoning)} reasoning block(s)")
    return "; ".join(parts) or "(empty)"


def _open_calls(messages: tuple[Message, ...]) -> list[tuple[str, str, str]]:
    answered = {m.tool_call_id for m in messages if m.role == Role.TOOL}
    seen: set[str] = set()
    out = []
    for m in messages:
        for c in m.tool_calls:
            if c.id not in answered and c.id not in seen:
                seen.add(c.id)
                out.append((c.id, c.name, c.arguments))
    return out


def handoff_report(replay: Replay, *, recent_turns: int = 8) -> str:
    """Render ``replay`` as Markdown: goal, state, recent turns, open tool calls, degradations."""
    meta = replay.meta
    sid = meta.session_id if meta is not None else "unknown session"
    agent = f" ({meta.agent_name})" if meta is not None and meta.agent_name else ""
    stop = replay.stop
    decision = resume_eligibility(stop, meta=meta)
    lines = [f"# Hand-off: session {sid}{agent}", ""]
    lines.append(f"- File: `{replay.path.name}`")
    if meta is not None:
        lines.append(f"- Started: {meta.started_at.isoformat()}")
        if meta.parent_session_id or meta.delegation_id:
            lines.append(
                f"- Delegated by session {meta.parent_session_id or '(missing)'}, "
                f"call {meta.delegation_id or '(missing)'}"
            )
    lines.append(f"- Stop: {stop.describe()}" + (f": {stop.reason}" if stop.reason else ""))
    if stop.terminal is not None and stop.terminal.error is not None:
        err = stop.terminal.error
        lines.append(f"- Error: {err.type}: {_one_line(err.message, _TURN_CHARS)}")
    lines.append(f"- Resume: {decision.reason}")
    lines.append(
        f"- Messages: {replay.total_messages} ({len(replay.messages)} replayed), about "
        f"{replay.estimated_tokens} tokens; "
        + ("verified against its last checkpoint" if replay.verified else "not verified")
    )
    lines += ["", "## Goal", ""]
    goal = next((m for m in replay.messages if m.role == Role.USER), None)
    if goal is None:
        lines.append("(no user message in the replayed conversation)")
    else:
        lines.append(_block(goal.text() or "(no text)", _GOAL_CHARS))
    recent = replay.messages[-recent_turns:] if recent_turns > 0 else ()
    lines += ["", f"## Recent turns (last {len(recent)})", ""]
    if not recent:
        lines.append("(none)")
    for m in recent:
        lines.append(f"- **{m.role}**: {_summary(m)}")
    open_calls = _open_calls(replay.messages)
    lines += ["", "## Open tool calls", ""]
    if not open_calls:
        lines.append("(none)")
    for cid, name, args in open_calls:
        lines.append(f"- `{name}` ({cid}): `{_one_line(args, 200)}`")
    lines += ["", "## Degradations", ""]
    if not replay.degraded:
        lines.append("(none: restored exactly)" if replay.verified else "(none)")
    for d in replay.degraded:
        lines.append(f"- {d}")
    return "\n".join(lines) + "\n"
