"""Import Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as rollouts.

Every version in the wild: 1.0.x (sidechains inline in the main file), 2.0.x (``agent-*.jsonl``
beside the session), 2.1.x (``<session>/subagents/agent-*.jsonl``) and the newest line types.
Each subagent file or inline sidechain becomes a delegated child with the parent's session id
and, when it can be known, the delegating ``Task`` call's id; every line of every file is
accounted for (:class:`~ledger.importers.FileReport`). See ADRs 0127-0129.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from ledger.importers._claude_lines import ClaudeSession, convert_lines
from ledger.importers._claude_path import link_fault
from ledger.importers._plan import Plan, RootIndex
from ledger.importers._report import Disposition, FileReport, ImportReport, Tally
from ledger.importers._run import (
    Progress,
    Sources,
    discover,
    guarded,
    mark_unreadable,
    provenance,
    report,
    usable_id,
    write_all,
)
from ledger.importers._source import Source
from ledger.records import StopKind

__all__ = ["TOOL", "default_source", "import_sessions"]

TOOL = "claude-code"
_AGENT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
Links = dict[tuple[str, str], tuple[str, str | None]]


def default_source() -> Path:
    """Where Claude Code keeps its transcripts: ``~/.claude/projects``."""
    return Path.home() / ".claude" / "projects"


def import_sessions(
    source: Sources,
    root: str | Path,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the transcripts under ``source`` (a file, a project folder or the projects tree,
    or several) as rollouts in ``root``; one bad file never stops the others.

    Sessions are read before subagent files, so that a child finds its delegating call.
    ``progress(path, bytes)`` is called after each file. Importing the same source again
    writes nothing and says so (status ``unchanged``).
    """
    files = discover(source)
    index = RootIndex(Path(root))
    links: Links = {}
    subs = {p for p in files if _is_subagent_file(p)}
    reports: list[FileReport] = []
    for path in [*(p for p in files if p not in subs), *(p for p in files if p in subs)]:
        convert = partial(_convert, index=index, links=links, dry_run=dry_run, sub=path in subs)
        reports.append(guarded(TOOL, path, convert))
        if progress is not None:
            progress(path, reports[-1].bytes)
    return ImportReport(tool=TOOL, files=tuple(reports), dry_run=dry_run)


def _is_subagent_file(path: Path) -> bool:
    """Whether the first conversation line of a file is a sidechain's (a subagent file)."""
    if not path.is_file():  # a FIFO or a device: reported by the import, never opened here
        return False
    try:
        with open(path, "rb") as f:
            for _, raw in zip(range(50), f, strict=False):
                try:
                    o = msgspec.json.decode(raw.strip() or b"null")
                except msgspec.DecodeError:
                    continue
                if isinstance(o, dict) and o.get("type") in ("user", "assistant"):
                    return bool(o.get("isSidechain"))
    except OSError:
        return False
    return False


def _convert(
    src: Source, tally: Tally, *, index: RootIndex, links: Links, dry_run: bool, sub: bool
) -> FileReport:
    main: list[int] = []
    side: dict[str, list[int]] = {}
    chains = _Sidechains(src.values)
    for n in mark_unreadable(src, tally):
        o = src.values[n - 1]
        if fault := link_fault(o):
            tally.mark(n, Disposition.DAMAGED, f"a line that cannot be placed ({fault})")
        elif o.get("isSidechain") and not sub:
            side.setdefault(chains.key(o), []).append(n)
        else:
            main.append(n)
    session = ClaudeSession()
    ops = convert_lines(src.values, main, tally, session)
    session.session_id = usable_id(session.session_id) or src.path.stem
    plans: list[Plan] = []
    parent: str | None = None
    delegation: str | None = None
    name: str | None = None
    sid: str = session.session_id
    if sub:
        agent = session.agent_id or src.path.stem.removeprefix("agent-")
        parent = sid
        sid = f"{sid}-{agent}"
        delegation, name = links.get((parent, agent), (None, None))
        name = name or _internal_name(agent)
    for agent_id, (call, kind) in session.links.items():
        links[(sid, agent_id)] = (call, kind)
    plans.append(_plan(src, session, sid, name, parent, delegation, ops))
    for key, numbers in side.items():
        child = ClaudeSession()
        child_ops = convert_lines(src.values, numbers, tally, child)
        for n in numbers:
            fate = tally.fates[n - 1]
            if fate is not None and fate[0] is Disposition.IMPORTED:
                tally.mark(n, Disposition.CHILD, f"inline sidechain -> {fate[1]} of a child")
        task, kind = _match_task(child_ops, session)
        child_sid = f"{sid}-{child.agent_id or key}"
        plans.append(
            _plan(src, child, child_sid, _agent_name(kind) or "sidechain", sid, task, child_ops)
        )
    written = write_all(plans, index, dry_run)
    return report(
        TOOL,
        src,
        tally,
        written,
        session.version,
        sessions=0 if sub else 1,
        children=len(plans) if sub else len(plans) - 1,
    )


class _Sidechains:
    """Which inline sidechain a line belongs to: its agent id, or the root of its chain.

    The uuid map is built once and every root found is remembered for the lines walked to it,
    so that a file of long sidechains is read in linear time, not in the square of its lines.
    """

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.by_uuid = {
            v.get("uuid"): v
            for v in values
            if isinstance(v, dict) and v.get("isSidechain") and isinstance(v.get("uuid"), str)
        }
        self.roots: dict[str, str] = {}

    def key(self, o: dict[str, Any]) -> str:
        if isinstance(o.get("agentId"), str):
            return str(o["agentId"])
        cur, walked = o, set()
        while isinstance(cur.get("uuid"), str) and cur["uuid"] not in self.roots:
            walked.add(cur["uuid"])
            parent = cur.get("parentUuid")
            if not isinstance(parent, str) or parent not in self.by_uuid or parent in walked:
                break
            cur = self.by_uuid[parent]
        uuid = cur.get("uuid")
        found = self.roots.get(uuid) if isinstance(uuid, str) else None
        root = found or f"sidechain-{str(cur.get('uuid', 'x'))[:8]}"
        self.roots.update(dict.fromkeys(walked, root))
        return root


def _match_task(ops: list[Any], parent: ClaudeSession) -> tuple[str | None, str | None]:
    """1.0.x: the Task call whose prompt is the sidechain's first user text (a heuristic)."""
    first = next((m for m in ops if getattr(m, "role", None) == "user"), None)
    if first is None:
        return None, None
    text = first.text()
    for call, (prompt, kind) in parent.tasks.items():
        if prompt and prompt == text:
            return call, kind
    return None, None


def _internal_name(agent: str) -> str | None:
    for internal in ("aprompt_suggestion", "acompact"):
        if agent.startswith(internal):
            return internal.removeprefix("a")
    return None


def _agent_name(kind: str | None) -> str | None:
    if not kind:
        return None
    cleaned = _AGENT_NAME.sub("_", kind).strip("_.")[:128]
    return cleaned or None


def _plan(
    src: Source,
    s: ClaudeSession,
    sid: str,
    name: str | None,
    parent: str | None,
    delegation: str | None,
    ops: list[Any],
) -> Plan:
    origin = provenance(
        TOOL,
        src,
        version=s.version,
        source_session_id=s.session_id,
        agent_id=s.agent_id,
        started_at=s.started,
    )
    meta: dict[str, Any] = {"provider": "anthropic", "claude_code": s.envelope}
    if s.model:
        meta["model"] = s.model
    if s.cwd:
        meta["cwd"] = s.cwd
    tool = f"Claude Code {s.version}" if s.version else "Claude Code"
    reason = (
        f"imported from {tool}: {s.tail} at the end of the transcript; {tool.split(' ')[0]} "
        "Code resumes such a session from there"
    )
    return Plan(
        session_id=sid,
        agent_name=_agent_name(name),
        parent_session_id=parent,
        delegation_id=delegation,
        meta=meta,
        provenance=origin,
        ops=tuple(ops),
        stop=StopKind.PAUSED,
        reason=reason,
    )
