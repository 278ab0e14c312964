"""How the `rollout` command draws things: transcripts, sizes, times, short ids.

Everything a user wrote reaches the terminal as ``rich.text.Text``, never as markup, so a
message that contains ``[bold]`` prints as those characters. rich is imported lazily.

A rollout is input from anyone: its text may hold terminal control sequences (ESC, 8-bit CSI,
OSC 52 writing the clipboard). Nothing read from a file reaches the terminal raw: the console
made by :func:`safe_console` shows every control character of the text it prints as a visible
escape, and :func:`json_safe` escapes DEL and the C1 range in JSON output (JSON already escapes
the C0 range), which keeps the JSON valid and equal once parsed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from ledger.damage import Degradation
from ledger.messages import MediaPart, Message, OpaquePart, Reasoning, Role, TextPart, ToolCall
from replay.display import json_visible, short_time, visible
from replay.pairing import pair_tool_calls

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from replay.sessions import SessionEntry

__all__ = [
    "json_safe",
    "safe_console",
    "terminal_safe",
    "human_size",
    "render_degradations",
    "render_transcript",
    "sessions_table",
    "short_id",
    "short_time",
]


def terminal_safe(text: str) -> str:
    """``text`` as it may reach a terminal (:func:`replay.display.visible`): tab and newline
    kept, every control, format or separator character shown as an escape."""
    return visible(text)


def json_safe(text: str) -> str:
    """JSON text with every unsafe character written as a ``\\u`` escape (same JSON value)."""
    return json_visible(text)


def safe_console(**kwargs: object) -> Console:
    """A rich console that shows control characters in printed text instead of sending them.

    rich's own control output (styles, cursor moves of a progress bar) is kept; only the text
    of the segments is made safe, after layout, so nothing printed can smuggle a sequence in.
    """
    from rich.console import Console
    from rich.segment import Segment

    class _SafeConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit with status 1; the command decides (ADR 0043: a reader that
            # left early is no error), so say nothing more and let the error reach it.
            self.quiet = True
            raise BrokenPipeError

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return super()._render_buffer(
                seg if seg.control else Segment(terminal_safe(seg.text), seg.style, None)
                for seg in buffer
            )

    return _SafeConsole(**kwargs)  # type: ignore[arg-type]


SHORT_ID: Final = 8
_FOLD: Final = 160
_OUTPUT_FOLD: Final = 600

_ROLE_STYLE: Final = {
    Role.SYSTEM: "bold magenta",
    Role.DEVELOPER: "bold magenta",
    Role.USER: "bold green",
    Role.ASSISTANT: "bold cyan",
    Role.TOOL: "bold blue",
}


def short_id(session_id: str | None) -> str:
    """The first characters of a session id, enough to tell sessions apart in a table."""
    if not session_id:
        return "-"
    return session_id[:SHORT_ID]


def human_size(n: int | None) -> str:
    """A byte count for people: ``812 B``, ``4.2 KiB``, ``1.0 MiB``."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _fold(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "\u2026"


def _content_text(m: Message) -> str:
    if m.content is None:
        return ""
    if isinstance(m.content, str):
        return m.content
    parts: list[str] = []
    for p in m.content:
        if isinstance(p, TextPart):
            parts.append(p.text)
        elif isinstance(p, MediaPart):
            parts.append(f"[{p.media_type} {p.name or p.url or 'inline data'}]")
        elif isinstance(p, OpaquePart):
            parts.append(f"[opaque {p.provider or 'provider'} item]")
    return "\n".join(parts)


def _reasoning_line(r: Reasoning, full: bool) -> str:
    bits = [str(r.kind)]
    if r.text is not None:
        bits.append(f"{len(r.text)} chars")
    if r.summary:
        bits.append(f"{len(r.summary)} summary part(s)")
    if r.signature is not None:
        bits.append("signed")
    if r.encrypted is not None:
        bits.append(f"opaque payload of {len(r.encrypted)} chars")
    if r.origin is not None and r.origin.provider:
        bits.append(f"from {r.origin.provider}")
    head = f"reasoning ({', '.join(bits)})"
    body = r.text if r.text else " / ".join(r.summary)
    if not body:
        return head
    return f"{head}: {body if full else _fold(body, _FOLD)}"


def render_degradations(console: Console, degraded: Sequence[Degradation]) -> None:
    """Draw each degradation on its own highlighted line (nothing when there are none)."""
    from rich.text import Text

    for d in degraded:
        console.print(Text(f"! {d}", style="bold yellow"))


def _output_block(console: Console, m: Message, label: str, full: bool, style: str) -> None:
    from rich.text import Text

    text = _content_text(m)
    shown = text if full or len(text) <= _OUTPUT_FOLD else text[:_OUTPUT_FOLD] + "\u2026"
    mark = " (error)" if m.is_error else ""
    line = Text(f"    {label}{mark}: ", style=style)
    line.append(shown)
    console.print(line)


def _call_block(
    console: Console,
    call: ToolCall,
    answers: tuple[int, ...],
    messages: Sequence[Message],
    full: bool,
) -> None:
    from rich.text import Text

    head = Text(f"  \u2192 {call.name}", style="bold")
    head.append(f" [{call.id}] ", style="dim")
    head.append(call.arguments if full else _fold(call.arguments, _FOLD))
    console.print(head)
    if not answers:
        console.print(Text("    no output recorded (interrupted?)", style="bold yellow"))
        return
    for n, idx in enumerate(answers):
        last = n == len(answers) - 1
        label = "\u2190 output" if last else "\u2190 superseded output"
        _output_block(console, messages[idx], label, full, "blue" if last else "dim yellow")


def render_transcript(
    console: Console,
    messages: Sequence[Message],
    *,
    full: bool = False,
    abandoned: Mapping[int, int] | None = None,
) -> None:
    """Draw a conversation: roles, folded reasoning, each tool call with its outputs under it.

    Outputs are paired with calls per turn (:mod:`replay.pairing`), as the repair for
    providers pairs them; an output that answers no call of its turn is flagged as an orphan.
    ``abandoned`` maps the index of each message a rewind abandoned to that rewind's seq: such
    messages are marked, never left out (ADR 0131).
    """
    from rich.text import Text

    pairing = pair_tool_calls(messages)
    inline = pairing.answers.keys()
    for i, m in enumerate(messages):
        if i in inline:
            continue
        head = Text(f"#{i + 1} ", style="dim")
        head.append(str(m.role), style=_ROLE_STYLE.get(m.role, "bold"))
        if m.name:
            head.append(f" ({m.name})", style="dim")
        if m.is_anchored:
            head.append(" anchored", style="dim")
        if abandoned and i in abandoned:
            head.append(f" abandoned (rewind at seq {abandoned[i]})", style="bold yellow")
        if i in pairing.orphans:
            head.append(
                f" orphan output for call {m.tool_call_id or '?'} (no such call in its turn)",
                style="bold yellow",
            )
        console.print(head)
        for r in m.reasoning:
            console.print(Text(f"  {_reasoning_line(r, full)}", style="dim italic"))
        text = _content_text(m)
        if text:
            body = Text("  ")
            body.append(text if full or m.role != Role.SYSTEM else _fold(text, _FOLD))
            console.print(body)
        seen: set[str] = set()
        for call in m.tool_calls:
            if call.id in seen:
                continue  # the same id twice in one message is one call
            seen.add(call.id)
            _call_block(console, call, pairing.outputs.get((i, call.id), ()), messages, full)


def sessions_table(entries: Sequence[SessionEntry]) -> Table:
    """The table `rollout ls` prints (the demo prints it too)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for name, justify in (
        ("started (UTC)", "left"),
        ("session", "left"),
        ("agent", "left"),
        ("parent", "left"),
        ("stop", "left"),
        ("resume", "left"),
        ("size", "right"),
        ("msgs", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("notes")
    for e in entries:
        cp = e.stop.checkpoint
        kind = e.stop.stop_kind or ("killed" if e.stop.killed else "unknown")
        if e.stop.found and e.stop.killed:
            kind = "killed"
        resume = Text(
            "yes" if e.eligibility.replayable else f"no: {e.eligibility.tier}",
            style="green" if e.eligibility.replayable else "yellow",
        )
        parent = short_id(e.parent_session_id) if e.is_child else ""
        if e.is_child and not (e.parent_session_id and e.delegation_id):
            parent = (parent if e.parent_session_id else "") + "?"
        table.add_row(
            short_time(e.started_at),
            short_id(e.session_id),
            e.agent_name or "",
            parent,
            kind,
            resume,
            human_size(e.size),
            str(cp.message_count) if cp is not None else "",
            Text(", ".join(str(f) for f in e.flags), style="bold yellow"),
        )
    return table
