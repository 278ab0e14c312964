"""`rollout grep PATTERN`: search message text, tool arguments and outputs across sessions.

Streaming (ADR 0045): one file at a time, read in chunks by the ledger's reader and never
rebuilt into a conversation, and each hit printed as soon as it is found, so memory stays flat
in the number and the size of the sessions. Exit statuses follow grep: 0 when something
matched, 1 when nothing did, 2 on trouble (a bad pattern, a session that cannot be found or a
file that cannot be read; the other files are still searched).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import click

from ledger.messages import Message, Role, TextPart
from ledger.naming import RolloutNameError, parse_rollout_filename
from ledger.reader import iter_entries
from ledger.records import Compacted, MessageRecord, ReasoningRecord, SessionMeta
from replay._files import open_rollout
from replay._location import Location
from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_USAGE, CliError
from replay.cli._json import dump
from replay.cli._paths import parse_since, path_json, rollout_files
from replay.cli._render import short_id
from replay.sessions import iter_rollout_paths

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["Hit", "grep", "search_file", "snippet"]

EXIT_HITS: Final = 0
EXIT_NO_HITS: Final = 1
EXIT_TROUBLE: Final = 2
_CONTEXT: Final = 40
_MAX_MATCH: Final = 200
_SPACE: Final = re.compile(r"\s+")


@attrs.frozen
class Hit:
    """One match: where (file, line, role, field) and what (the text it was found in)."""

    path: Location
    session_id: str | None
    line: int
    role: str
    field: str
    text: str
    start: int
    end: int
    tool_name: str | None = None

    @property
    def label(self) -> str:
        """The role, and the field when it is not the message's own text."""
        if self.field in ("text", "output"):
            return self.role
        return f"{self.role}/{self.field.replace(' ', '/')}"


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text)


def snippet(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[str, bool]]:
    """The text around a match on one line: ``(piece, is_match)`` pieces, whitespace flattened.

    Up to 40 characters either side of the first match, every match inside that window
    marked; a very long match is cut.
    """
    lo, hi = max(0, start - _CONTEXT), min(len(text), end + _CONTEXT)
    pieces: list[tuple[str, bool]] = [("\u2026", False)] if lo > 0 else []
    at = lo
    for m in pattern.finditer(text, lo, hi):
        if m.end() == m.start():
            continue
        if m.start() > at:
            pieces.append((_flat(text[at : m.start()]), False))
        found = text[max(at, m.start()) : m.end()]
        if len(found) > _MAX_MATCH:
            found = found[:_MAX_MATCH] + "\u2026"
        pieces.append((_flat(found), True))
        at = m.end()
    if at < hi:
        pieces.append((_flat(text[at:hi]), False))
    if hi < len(text):
        pieces.append(("\u2026", False))
    return pieces


def _message_fields(m: Message) -> Iterator[tuple[str, str, str | None]]:
    if isinstance(m.content, str):
        text = m.content
    elif m.content:
        text = "\n".join(p.text for p in m.content if isinstance(p, TextPart))
    else:
        text = ""
    if text:
        yield ("output" if m.role == Role.TOOL else "text"), text, None
    for call in m.tool_calls:
        if call.arguments:
            yield "arguments", call.arguments, call.name


@attrs.frozen
class _Query:
    pattern: re.Pattern[str]
    roles: frozenset[str]
    since: datetime | None
    reasoning: bool


def search_file(path: Location, query: _Query) -> Iterator[Hit]:
    """The hits in one rollout, in file order, read as a stream (raises ``OSError``)."""
    session_id: str | None = None
    try:
        name = parse_rollout_filename(path.name)
        session_id = name.session_id
        started = name.started_at
    except RolloutNameError:
        started = None
    with open_rollout(path) as f:
        first = True
        for line, entry in iter_entries(f):
            if first:
                first = False
                if isinstance(entry, SessionMeta):
                    session_id, started = entry.session_id, entry.started_at
                if query.since is not None and (started is None or started < query.since):
                    return
            fields: list[tuple[str, str, str, str | None]] = []
            if isinstance(entry, MessageRecord):
                m = entry.message
                fields += [(str(m.role), *f) for f in _message_fields(m)]
            elif isinstance(entry, ReasoningRecord) and query.reasoning:
                r = entry.reasoning
                text = "\n".join(x for x in (r.text, *r.summary) if x)
                fields.append((str(Role.ASSISTANT), "reasoning", text, None))
            elif isinstance(entry, Compacted):
                for m in entry.messages:
                    fields += [
                        (str(m.role), f"compacted {f[0]}", *f[1:]) for f in _message_fields(m)
                    ]
            for role, field, text, tool in fields:
                if query.roles and role not in query.roles:
                    continue
                m_ = query.pattern.search(text)
                if m_ is not None:
                    yield Hit(path, session_id, line, role, field, text, m_.start(), m_.end(), tool)


def _walk(root: Location, sessions: tuple[str, ...]) -> Iterator[Location]:
    if not sessions:
        if isinstance(root, Path):
            yield from iter_rollout_paths(root, ordered=True, on_error=state().walk_error)
        else:
            yield from rollout_files(root)
        return
    opts = state()
    seen: set[Location] = set()
    for arg in sessions:
        try:
            path = opts.target(arg)
        except CliError as exc:
            raise CliError(exc.message, EXIT_TROUBLE) from None
        if path not in seen:
            seen.add(path)
            yield path


def _hit_json(hit: Hit, pattern: re.Pattern[str]) -> dict[str, Any]:
    return {
        "path": path_json(hit.path),
        "session_id": hit.session_id,
        "line": hit.line,
        "role": hit.role,
        "field": hit.field,
        "tool_name": hit.tool_name,
        "start": hit.start,
        "end": hit.end,
        "match": hit.text[hit.start : hit.end],
        "snippet": "".join(p for p, _ in snippet(hit.text, pattern, hit.start, hit.end)),
    }


def _hit_line(hit: Hit, pattern: re.Pattern[str]) -> Text:
    from rich.text import Text

    line = Text(short_id(hit.session_id), style="magenta")
    line.append(f":{hit.line}:", style="dim")
    line.append(hit.label + (f"({hit.tool_name})" if hit.tool_name else ""), style="cyan")
    line.append(": ")
    for piece, is_match in snippet(hit.text, pattern, hit.start, hit.end):
        line.append(piece, style="bold red" if is_match else None)
    return line


def _warn(out: Console, path: Location, exc: OSError) -> None:
    from rich.text import Text

    out.print(Text(f"rollout grep: error: {path}: {exc.strerror or exc}; skipped"))


@subcommand(
    "grep",
    json_output=True,
    walk_error_status=EXIT_TROUBLE,
    short_help="Search message text and tool calls.",
)
@click.argument("pattern")
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=click.Choice([str(r) for r in Role]),
    help="Only messages of this role (repeatable).",
)
@click.option(
    "--session",
    "sessions",
    multiple=True,
    metavar="PATH|SESSION_ID",
    help="Only this session (repeatable); default: every session under the root.",
)
@click.option("--since", metavar="WHEN", help="Only sessions started since (2h, 3d, 2026-12-01).")
@click.option("-i", "--ignore-case", is_flag=True, help="Match letters of either case.")
@click.option("--reasoning", is_flag=True, help="Search reasoning text too.")
def grep(
    pattern: str,
    roles: tuple[str, ...],
    sessions: tuple[str, ...],
    since: str | None,
    ignore_case: bool,
    reasoning: bool,
) -> None:
    """Search every session under the root for a regular expression (Python syntax).

    Looks in message text, tool call arguments and tool outputs (and reasoning with
    --reasoning), one line per hit: short session id, line number in the file, role, and the
    text around the match. With --json, one JSON object per hit per line. Exit status as
    grep: 0 some hit, 1 none, 2 trouble (bad pattern, unknown session, unreadable file).
    """
    opts = state()
    try:
        compiled = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    except (re.error, OverflowError, RecursionError) as exc:
        raise CliError(f"bad pattern {pattern!r}: {exc}", EXIT_USAGE) from None
    try:
        root = opts.existing_root()
        threshold = parse_since(since) if since is not None else None
    except CliError as exc:
        raise CliError(exc.message, EXIT_TROUBLE) from None
    query = _Query(compiled, frozenset(roles), threshold, reasoning)
    out = console()
    err = console(stderr=True)
    hits = trouble = 0
    for path in _walk(root, sessions):
        try:
            for hit in search_file(path, query):
                hits += 1
                if opts.json:
                    click.echo(dump(_hit_json(hit, compiled)))
                else:
                    out.print(_hit_line(hit, compiled))
        except BrokenPipeError:
            raise  # the reader of our output left: not a file's fault
        except OSError as exc:
            trouble += 1
            _warn(err, path, exc)
    if trouble:
        exit_with(EXIT_TROUBLE)
    exit_with(EXIT_HITS if hits else EXIT_NO_HITS)
