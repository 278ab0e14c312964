"""The HTML page: one self-contained file, no script, nothing fetched, every value escaped.

The element structure is this module's alone: values from the rollout only ever appear as
escaped text inside elements written here (:func:`_t`), or inside attribute values this module
computes (anchors from message numbers, links from :func:`export_filename`, checked ``data:``
image URLs). So a rollout can change the words on the page, never its elements or attributes.
"""

from __future__ import annotations

import html
from typing import Final

from ledger.damage import DegradationKind
from ledger.messages import MediaPart, Message, OpaquePart, Reasoning, Role, TextPart
from replay.export._media import describe_media, inline_image
from replay.export._page import (
    ChildLink,
    Exchange,
    Page,
    Turn,
    export_filename,
    reasoning_label,
    visible,
)
from replay.export._style import CSP, CSS

__all__ = ["render_html"]

_ROLE_CLASS: Final = {role: f"role-{role.value}" for role in Role}


def _t(text: str) -> str:
    """Text from anywhere, made visible and escaped for element content and attribute values."""
    return html.escape(visible(text), quote=True)


def _code(text: str) -> str:
    return f"<code>{_t(text)}</code>"


def _pre(text: str) -> str:
    return f"<pre>{_t(text)}</pre>"


def _session(session_id: str, links: bool) -> str:
    if not links:
        return _code(session_id)
    return f'<a href="{_t(export_filename(session_id, "html"))}">{_code(session_id)}</a>'


def _content(m: Message) -> str:
    if m.content is None:
        return ""
    if isinstance(m.content, str):
        return _pre(m.content)
    out: list[str] = []
    for part in m.content:
        if isinstance(part, TextPart):
            out.append(_pre(part.text))
        elif isinstance(part, MediaPart):
            url = inline_image(part)
            img = f'<img src="{_t(url)}" alt="{_t(part.name or "image")}">' if url else ""
            out.append(
                f'<figure class="media"><figcaption>{_t(describe_media(part))}</figcaption>'
                f"{img}</figure>"
            )
        elif isinstance(part, OpaquePart):
            raw = bytes(part.data).decode("utf-8", "replace")
            out.append(
                f'<p class="label">opaque item from {_t(part.provider or "the provider")}</p>'
                f"{_pre(raw)}"
            )
    return "".join(out)


def _reasoning(r: Reasoning) -> str:
    body = [_pre(r.text)] if r.text is not None else []
    for s in r.summary:
        body.append(f'<p class="label">summary</p>{_pre(s)}')
    return (
        f'<details class="reasoning"><summary>{_t(reasoning_label(r))}</summary>'
        f"{''.join(body)}</details>"
    )


def _child(c: ChildLink, links: bool) -> str:
    agent = f" ({_code(c.agent_name)})" if c.agent_name is not None else ""
    return f"delegated to session {_session(c.session_id, links)}{agent}: {_t(c.stop)}"


def _exchange(x: Exchange, links: bool) -> str:
    children = "".join(f'<p class="child">{_child(c, links)}</p>' for c in x.children)
    outputs: list[str] = []
    for o in x.outputs:
        label = "superseded output" if o.superseded else "output"
        classes = "output" + (" error" if o.message.is_error else "")
        classes += " superseded" if o.superseded else ""
        error = ", an error" if o.message.is_error else ""
        outputs.append(
            f'<div class="{classes}" id="m{o.number}"><p class="label">\u2190 {label} '
            f"(message #{o.number}{error})</p>{_content(o.message)}</div>"
        )
    if not outputs:
        outputs.append('<p class="warn">no output recorded (interrupted?)</p>')
    return (
        f'<div class="call" id="{x.anchor}"><p class="call-head">\u2192 {_code(x.call.name)} '
        f"call {_code(x.call.id)}</p>{children}"
        f'<div class="io"><div class="args"><p class="label">arguments</p>'
        f"{_pre(x.call.arguments)}</div>"
        f'<div class="outputs">{"".join(outputs)}</div></div></div>'
    )


def _turn(t: Turn, links: bool) -> str:
    m = t.message
    name = f" {_code(m.name)}" if m.name is not None else ""
    head = (
        f'<h3><a class="num" href="#m{t.number}">#{t.number}</a> '
        f'<span class="role">{_t(str(m.role))}</span>{name}</h3>'
    )
    notes: list[str] = []
    if m.role == Role.TOOL:
        call = _code(m.tool_call_id) if m.tool_call_id is not None else "(none)"
        notes.append(f"output for call {call}" + (", an error" if m.is_error else ""))
    if t.orphan:
        notes.append('<span class="warn">orphan output: no such call before it</span>')
    if m.is_anchored:
        notes.append("anchored")
    if m.truncation_marker is not None:
        notes.append(f"truncated: {_t(m.truncation_marker)}")
    note = f'<p class="notes">{"; ".join(notes)}</p>' if notes else ""
    body = "".join(_reasoning(r) for r in m.reasoning) + _content(m)
    body += "".join(_exchange(x, links) for x in t.exchanges)
    role = _ROLE_CLASS.get(m.role, "role-other")
    return f'<article class="msg {role}" id="m{t.number}">{head}{note}{body}</article>\n'


def _header(page: Page, links: bool) -> str:
    rows: list[str] = []
    for f in page.facts:
        if f.session_link:
            value = _session(f.value, links)
        else:
            value = _code(f.value) if f.code else _t(f.value)
        rows.append(f"<dt>{_t(f.label)}</dt><dd>{value}</dd>\n")
    title = _code(page.session_id) if page.session_id is not None else "(unknown)"
    trace = (
        f'<details class="traceback"><summary>traceback</summary>'
        f"{_pre(page.error_traceback)}</details>"
        if page.error_traceback is not None
        else ""
    )
    return (
        f'<header>\n<h1>Session {title}</h1>\n<dl class="facts">\n{"".join(rows)}</dl>\n'
        f"{trace}</header>\n"
    )


def _degraded(page: Page) -> str:
    if not page.degraded:
        return ""
    items: list[str] = []
    for d in page.degraded:
        where = f"line {d.line}: " if d.line is not None else ""
        see = (
            ' <a href="#compaction">(the compaction)</a>'
            if d.kind == DegradationKind.REBUILT_FROM_COMPACTED and page.compaction is not None
            else ""
        )
        items.append(f"<li>{where}{_t(d.detail)} {_code(str(d.kind))}{see}</li>\n")
    return (
        '<section id="degraded">\n<h2>What could not be restored exactly</h2>\n'
        f"<ul>\n{''.join(items)}</ul>\n</section>\n"
    )


def render_html(page: Page, *, session_links: bool) -> str:
    """The HTML document of ``page``, as one string."""
    title = page.session_id if page.session_id is not None else "unknown session"
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>Session {_t(title)} \u00b7 rollout</title>\n",
        f"<style>{CSS}</style>\n</head>\n<body>\n",
        _header(page, session_links),
        "<main>\n",
        _degraded(page),
        '<section id="transcript">\n<h2>Transcript</h2>\n',
    ]
    if page.compaction is not None:
        parts.append(f'<p class="note" id="compaction">{_t(page.compaction)}</p>\n')
    if not page.turns:
        parts.append('<p class="label">No messages.</p>\n')
    parts.extend(_turn(t, session_links) for t in page.turns)
    parts.append("</section>\n")
    if page.other_children:
        items = "".join(f"<li>{_child(c, session_links)}</li>\n" for c in page.other_children)
        parts.append(
            f'<section id="children">\n<h2>Other delegated sessions</h2>\n<ul>\n{items}</ul>\n'
            "</section>\n"
        )
    parts.append("</main>\n<footer>Exported by rollout-ledger.</footer>\n</body>\n</html>\n")
    return "".join(parts)
