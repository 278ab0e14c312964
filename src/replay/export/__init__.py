"""Export a session for people: a Markdown transcript, or one self-contained, safe HTML page.

Both take a :class:`~replay.Replay` (read it with ``read_replay(path, whole_file=True)``) and
show the same things: the session's identity, delegation coordinates, stop facts and resume
eligibility; what could not be restored exactly; the compaction the conversation starts from;
then every message with its role, its reasoning folded, each tool call with its arguments and
its outputs beside it, and the delegated child sessions linked where they were delegated.

A rollout is hostile input. The HTML page runs no script and loads nothing (a strict
Content-Security-Policy says so to the browser too), and no text from the file can add an
element or attribute to it; the Markdown keeps every value from the file in code spans, code
blocks or escaped prose. In both, control characters are shown as escapes, never sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from replay.export._html import render_html
from replay.export._markdown import render_markdown
from replay.export._media import MAX_INLINE_IMAGE
from replay.export._page import build_page, export_filename, visible
from replay.replay import Replay
from replay.sessions import SessionEntry

__all__ = [
    "ExportFormat",
    "MAX_INLINE_IMAGE",
    "export",
    "export_filename",
    "to_html",
    "to_markdown",
    "visible",
]


class ExportFormat(StrEnum):
    """The formats a session exports to; the value is the file name's extension."""

    MARKDOWN = "md"
    HTML = "html"


def to_markdown(
    replay: Replay, *, sessions: Iterable[SessionEntry] = (), session_links: bool = True
) -> str:
    """The session in ``replay`` as a Markdown transcript.

    ``sessions`` may be a whole listing (:func:`replay.list_sessions`): the entries whose parent
    is this session are shown as its delegated children. With ``session_links`` a parent or
    child session id links to that session's export beside this one, named by
    :func:`export_filename`.
    """
    return render_markdown(build_page(replay, sessions), session_links=session_links)


def to_html(
    replay: Replay, *, sessions: Iterable[SessionEntry] = (), session_links: bool = True
) -> str:
    """The session in ``replay`` as one self-contained HTML page (no script, nothing fetched).

    ``sessions`` and ``session_links`` are as for :func:`to_markdown`.
    """
    return render_html(build_page(replay, sessions), session_links=session_links)


def export(
    replay: Replay,
    fmt: ExportFormat | str,
    *,
    sessions: Iterable[SessionEntry] = (),
    session_links: bool = True,
) -> str:
    """The session in ``replay`` in ``fmt`` (``"md"`` or ``"html"``); see :func:`to_html`."""
    try:
        kind = ExportFormat(fmt)
    except ValueError:
        choices = ", ".join(repr(f.value) for f in ExportFormat)
        raise ValueError(f"unknown export format {fmt!r}: use one of {choices}") from None
    render = to_html if kind is ExportFormat.HTML else to_markdown
    return render(replay, sessions=sessions, session_links=session_links)
