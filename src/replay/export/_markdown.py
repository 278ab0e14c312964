"""The Markdown page: every value from the rollout in a code span, a code block or escaped prose.

Hostile text must not become Markdown structure. Three forms carry it, and nothing else does:

- a fenced code block whose fence is longer than any backtick run inside, so no line of the text
  can close it (a block is never indented or nested, so nothing else can end it);
- a code span on one line, its backtick string longer than any run inside, line breaks written
  as ``\\x0a``;
- prose on one line, always after text of this module's own, with every character that can
  open inline structure backslash-escaped (code, emphasis, strikethrough, links, HTML, entities,
  math, table cells, headings, the autolinks of GitHub-flavoured Markdown), line breaks written
  as ``\\x0a``.

Before any of these, :func:`~replay.export._page.visible` writes control characters as escapes.
The ``<details>`` around reasoning is raw HTML whose only text is HTML-escaped.
"""

from __future__ import annotations

import html
import re
from typing import Final

from ledger.messages import MediaPart, Message, OpaquePart, Reasoning, Role, TextPart
from replay.export._media import describe_media
from replay.export._page import (
    ChildLink,
    Exchange,
    Page,
    Turn,
    export_filename,
    reasoning_label,
    visible,
)

__all__ = ["code_block", "code_span", "prose", "render_markdown"]

_BACKTICKS: Final = re.compile(r"`+")
_INLINE_SYNTAX: Final = re.compile(r"[\\`*_\[\]<>&~$|#]")
# GitHub's and GitLab's autolinks start at "www.", at the "://" after a scheme and around an
# email's "@": with the dot, the colon or the "@" escaped, no bare URL becomes a link.
_AUTOLINK: Final = re.compile(r"(?i)(?<=www)\.|:(?=//)|@")
_EDGE_SPACE: Final = re.compile(r"^\s+|\s+$")


def _longest_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS.findall(text)), default=0)


def _one_line(text: str) -> str:
    return visible(text).replace("\n", "\\x0a")


def prose(text: str) -> str:
    """Text on one line that Markdown shows as it is, for a place that is not a line's start."""
    body = _INLINE_SYNTAX.sub(lambda m: "\\" + m[0], _one_line(text))
    body = _AUTOLINK.sub(lambda m: "\\" + m[0], body)
    # Whitespace at either end would be trimmed away with the line's; a reference keeps it.
    return _EDGE_SPACE.sub(lambda m: "".join(f"&#{ord(c)};" for c in m[0]), body)


def code_span(text: str) -> str:
    """An inline code span showing ``text`` on one line (a blank one for an empty string)."""
    body = _one_line(text)
    if not body:
        return "` `"
    ticks = "`" * (_longest_run(body) + 1)
    if body[0] in "` " or body[-1] in "` ":
        body = f" {body} "
    return f"{ticks}{body}{ticks}"


def code_block(text: str) -> str:
    """A fenced code block holding ``text``, its fence longer than any backtick run inside."""
    body = visible(text)
    fence = "`" * max(3, _longest_run(body) + 1)
    return f"{fence}text\n{body}\n{fence}\n"


def _session(session_id: str, links: bool) -> str:
    span = code_span(session_id)
    if not links:
        return span
    return f"[{span}]({export_filename(session_id, 'md')})"


def _content(m: Message) -> list[str]:
    if m.content is None:
        return []
    if isinstance(m.content, str):
        return [code_block(m.content)]
    out: list[str] = []
    for part in m.content:
        if isinstance(part, TextPart):
            out.append(code_block(part.text))
        elif isinstance(part, MediaPart):
            out.append(f"*media:* {prose(describe_media(part))}\n")
        elif isinstance(part, OpaquePart):
            by = code_span(part.provider) if part.provider is not None else "the provider"
            out.append(f"*opaque item from* {by}\n")
            out.append(code_block(bytes(part.data).decode("utf-8", "replace")))
    return out


def _reasoning(r: Reasoning) -> list[str]:
    # One line: a blank line would end the HTML block and let the rest be read as Markdown.
    out = [f"<details>\n<summary>{html.escape(_one_line(reasoning_label(r)))}</summary>\n"]
    if r.text is not None:
        out.append(code_block(r.text))
    for s in r.summary:
        out.append("*summary:*\n")
        out.append(code_block(s))
    out.append("</details>\n")
    return out


def _child(c: ChildLink, links: bool) -> str:
    agent = f" ({code_span(c.agent_name)})" if c.agent_name is not None else ""
    return f"- delegated to session {_session(c.session_id, links)}{agent}: {prose(c.stop)}\n"


def _exchange(x: Exchange, links: bool) -> list[str]:
    out = [f"**→ tool call {code_span(x.call.name)}** (id {code_span(x.call.id)})\n"]
    out.extend(_child(c, links) for c in x.children)
    out.append("*arguments:*\n")
    out.append(code_block(x.call.arguments))
    if not x.outputs:
        out.append("**no output recorded** (interrupted?)\n")
    for o in x.outputs:
        label = "superseded output" if o.superseded else "output"
        error = ", an error" if o.message.is_error else ""
        out.append(f"*← {label} (message #{o.number}{error}):*\n")
        out.extend(_content(o.message))
    return out


def _turn(t: Turn, links: bool) -> list[str]:
    m = t.message
    head = f"### #{t.number} {m.role}"
    if m.name is not None:
        head += f" {code_span(m.name)}"
    out = [head + "\n"]
    notes = []
    if m.role == Role.TOOL:
        call = code_span(m.tool_call_id) if m.tool_call_id is not None else "*(none)*"
        notes.append(f"output for call {call}" + (", an error" if m.is_error else ""))
    if t.orphan:
        notes.append("**orphan output**: no such call before it")
    if m.is_anchored:
        notes.append("anchored")
    if m.truncation_marker is not None:
        notes.append(f"truncated: {prose(m.truncation_marker)}")
    if notes:
        out.append("; ".join(notes) + "\n")
    for r in m.reasoning:
        out.extend(_reasoning(r))
    out.extend(_content(m))
    for x in t.exchanges:
        out.extend(_exchange(x, links))
    return out


def render_markdown(page: Page, *, session_links: bool) -> str:
    """The Markdown text of ``page``; blocks are separated by one blank line."""
    title = code_span(page.session_id) if page.session_id is not None else "(unknown)"
    blocks: list[str] = [f"# Session {title}\n"]
    facts = []
    for f in page.facts:
        if f.session_link:
            value = _session(f.value, session_links)
        else:
            value = code_span(f.value) if f.code else prose(f.value)
        facts.append(f"- {prose(f.label)}: {value}\n")
    blocks.append("".join(facts))
    if page.error_traceback is not None:
        blocks.extend(["*traceback:*\n", code_block(page.error_traceback)])
    if page.degraded:
        blocks.append("## What could not be restored exactly\n")
        blocks.append(
            "".join(
                f"- {f'line {d.line}: ' if d.line is not None else ''}{prose(d.detail)} "
                f"({code_span(str(d.kind))})\n"
                for d in page.degraded
            )
        )
    blocks.append("## Transcript\n")
    if page.compaction is not None:
        blocks.append(f"> {prose(page.compaction)}\n")
    if not page.turns:
        blocks.append("*No messages.*\n")
    for t in page.turns:
        blocks.extend(_turn(t, session_links))
    if page.other_children:
        blocks.append("## Other delegated sessions\n")
        blocks.append("".join(_child(c, session_links) for c in page.other_children))
    blocks.append("---\n")
    blocks.append("*Exported by rollout-ledger.*\n")
    return "\n".join(blocks)
