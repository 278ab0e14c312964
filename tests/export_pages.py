"""Exported pages for tests: a replay using every field, and the structure of a page.

:func:`every_field_replay` builds the same shape of session each time (every role, content parts
of each kind, reasoning, a superseded output, a call without output, an orphan output, a
delegated child, degradations, a compaction, a failed stop with a traceback) and asks ``text``
for each string, so a test can fill them with hostile text and compare the page with the one
built from plain placeholders; :func:`html_shape` and :func:`markdown_shape` give the structure
to compare.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ledger import (
    FORMAT_VERSION,
    Degradation,
    DegradationKind,
    ErrorDetail,
    MediaPart,
    Message,
    OpaquePart,
    Origin,
    Reasoning,
    ReasoningKind,
    SessionMeta,
    Terminal,
    TextPart,
    ToolCall,
    raw_json,
)
from replay import Replay, SessionEntry, StopFacts, resume_eligibility

T0 = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
PNG_BASE64 = "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
"""A PNG signature and zeros: enough for the page's type check, so the page has an image."""
Text = Callable[[str], str]
_DETAILS_HTML = re.compile(r"<details>\n<summary>[^<>\n]*</summary>\n|</details>\n")


def _entry(session_id: str, agent: str, parent: str, delegation: str) -> SessionEntry:
    stop = StopFacts(found=False)
    return SessionEntry(
        path=Path("child.jsonl"),
        name=None,
        session_id=session_id,
        agent_name=agent,
        started_at=T0,
        parent_session_id=parent,
        delegation_id=delegation,
        size=0,
        meta=None,
        stop=stop,
        eligibility=resume_eligibility(stop),
    )


def _json_text(value: str) -> str:
    # JSON text cannot carry a lone surrogate; the part keeps the rest of the text.
    return value.encode("utf-8", "replace").decode("utf-8")


def every_field_replay(text: Text) -> tuple[Replay, tuple[SessionEntry, ...]]:
    """A replay using every field a page shows, and the listing entries of two children."""
    sid = text("session_id")
    calls = [
        ToolCall(id=text(f"call{k}_id") + f"-{k}", name=text(f"call{k}_name"), arguments=text(k))
        for k in "abc"
    ]
    reasoning = (
        Reasoning(
            text=text("reasoning_text"),
            summary=(text("summary_1"), text("summary_2")),
            signature=text("signature"),
            origin=Origin(provider=text("reasoning_provider")),
        ),
        Reasoning(kind=ReasoningKind.ENCRYPTED, encrypted=text("encrypted")),
    )
    messages = (
        Message(role="system", content=text("system")),
        Message(role="developer", content=text("developer"), name=text("developer_name")),
        Message(
            role="user",
            content=(
                TextPart(text=text("user_text")),
                MediaPart(media_type=text("media_type"), url=text("url"), name=text("media")),
                MediaPart(media_type="image/png", data=text("image_data")),
                MediaPart(media_type="image/png", data=PNG_BASE64, name=text("image_name")),
                OpaquePart(data=raw_json(_json_text(text("opaque"))), provider=text("opaque_by")),
            ),
            is_anchored=True,
            truncation_marker=text("truncation_marker"),
        ),
        Message(
            role="assistant", content=text("assistant"), reasoning=reasoning, tool_calls=(*calls,)
        ),
        Message(role="tool", tool_call_id=calls[0].id, content=text("output_a1")),
        Message(role="tool", tool_call_id=calls[0].id, content=text("output_a2"), is_error=True),
        Message(role="tool", tool_call_id=calls[1].id, content=(TextPart(text=text("output_b")),)),
        Message(role="tool", tool_call_id=text("orphan_id") + "-z", content=text("orphan")),
        Message(role="assistant", content=text("final")),
    )
    meta = SessionMeta(
        seq=1,
        ts=T0,
        format_version=FORMAT_VERSION,
        session_id=sid,
        started_at=T0,
        agent_name=text("agent_name"),
        parent_session_id=text("parent_session_id"),
        delegation_id=text("delegation_id"),
        model=text("model"),
        provider=text("provider"),
        cwd=text("cwd"),
        project=text("project"),
    )
    terminal = Terminal(
        seq=20,
        ts=T0,
        stop_kind=text("stop_kind"),
        reason=text("stop_reason"),
        error=ErrorDetail(
            type=text("error_type"), message=text("error_message"), traceback=text("traceback")
        ),
    )
    replay = Replay(
        path=Path(text("file_name") + ".jsonl"),
        meta=meta,
        messages=messages,
        checkpoint=None,
        terminal=terminal,
        verified=False,
        degraded=(
            Degradation(kind=DegradationKind.UNPARSEABLE_LINE, detail=text("damage"), line=3),
            Degradation(
                kind=DegradationKind.REBUILT_FROM_COMPACTED, detail=text("compacted"), line=9
            ),
        ),
        total_messages=len(messages),
        compactions=1,
        stop=StopFacts(found=True, stop_kind=terminal.stop_kind, terminal=terminal),
    )
    children = (
        _entry(text("child_b"), text("child_b_agent"), sid, calls[1].id),
        _entry(text("child_y"), text("child_y_agent"), sid, text("child_y_call") + "-y"),
    )
    return replay, children


def _text_keys() -> tuple[str, ...]:
    keys: list[str] = []
    every_field_replay(lambda key: keys.append(key) or "x")
    return tuple(keys)


TEXT_KEYS = _text_keys()
"""The name of every text field :func:`every_field_replay` asks for, in the order it asks."""


class Shape(HTMLParser):
    """Records the element structure of a page and every attribute value, ignoring text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, ...]] = []
        self.attributes: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, *sorted(name for name, _ in attrs)))
        self.attributes.extend((tag, name, value) for name, value in attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_comment(self, data: str) -> None:
        self.events.append(("comment", data))

    def handle_decl(self, decl: str) -> None:
        self.events.append(("decl", decl))

    def handle_pi(self, data: str) -> None:
        self.events.append(("pi", data))

    def unknown_decl(self, data: str) -> None:
        self.events.append(("unknown_decl", data))


def html_shape(page: str) -> Shape:
    """The parsed structure of an HTML page."""
    shape = Shape()
    shape.feed(page)
    shape.close()
    return shape


def markdown_shape(text: str) -> list[tuple[object, ...]]:
    """The token structure of a Markdown text: block tokens, and each inline token's children."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    out: list[tuple[object, ...]] = []

    def kinds(children: list[Token]) -> tuple[str, ...]:
        merged: list[str] = []
        for c in children:
            kind = "text" if c.type in ("text", "text_special") else c.type
            if not (merged and merged[-1] == kind == "text"):
                merged.append(kind)
        return tuple(merged)

    for tok in md.parse(text):
        if tok.type == "html_block":
            assert _DETAILS_HTML.fullmatch(tok.content), tok.content
        children = kinds(tok.children) if tok.children else ()
        out.append((tok.type, tok.tag, tok.nesting, tok.level, tok.info, children))
    return out
