"""Import Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as rollouts.

Every version in the wild: the ``{"timestamp", "type", "payload"}`` envelope of 0.3x to 0.15x
(``ordinal`` included), and the legacy layout before it (a bare header line, then bare items).
``compacted`` lines with a ``replacement_history`` (role-less compaction items included),
``turn_aborted``, turn contexts and token counts each get their record; every line of every file
is accounted for (:class:`~ledger.importers.FileReport`). See ADRs 0127-0129.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ledger.importers._codex_lines import CodexSession, convert_codex
from ledger.importers._plan import Plan, RootIndex
from ledger.importers._report import FileReport, ImportReport, Tally
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

TOOL = "codex"


def default_source() -> Path:
    """Where Codex CLI keeps its rollouts: ``~/.codex/sessions``."""
    return Path.home() / ".codex" / "sessions"


def import_sessions(
    source: Sources,
    root: str | Path,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the rollouts under ``source`` (a file or a sessions tree, or several) into
    ``root``; one bad file never stops the others.

    ``progress(path, bytes)`` is called after each file. Importing the same source again
    writes nothing and says so (status ``unchanged``).
    """
    index = RootIndex(Path(root))
    reports: list[FileReport] = []
    for path in discover(source):
        reports.append(guarded(TOOL, path, partial(_convert, index=index, dry_run=dry_run)))
        if progress is not None:
            progress(path, reports[-1].bytes)
    return ImportReport(tool=TOOL, files=tuple(reports), dry_run=dry_run)


def _convert(src: Source, tally: Tally, *, index: RootIndex, dry_run: bool) -> FileReport:
    mark_unreadable(src, tally)
    s = CodexSession()
    ops = convert_codex(src.values, tally, s)
    sid = usable_id(s.session_id) or src.path.stem
    meta: dict[str, Any] = {"provider": "openai", "codex": s.meta}
    if s.model:
        meta["model"] = s.model
    if s.cwd:
        meta["cwd"] = s.cwd
    tool = f"Codex {s.version}" if s.version else "Codex"
    plan = Plan(
        session_id=sid,
        agent_name=None,
        parent_session_id=s.parent,
        delegation_id=None,
        meta=meta,
        provenance=provenance(
            TOOL, src, version=s.version, source_session_id=s.session_id, started_at=s.started
        ),
        ops=tuple(ops),
        stop=StopKind.PAUSED,
        reason=f"imported from {tool}: {s.tail} at the end of the rollout; Codex resumes "
        "such a session from there",
    )
    written = write_all([plan], index, dry_run)
    child = s.parent is not None
    return report(
        TOOL, src, tally, written, s.version, sessions=0 if child else 1, children=int(child)
    )
