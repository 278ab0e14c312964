"""What both importers share: finding source files, and reporting on one of them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ledger.importers._plan import Plan, RootIndex, Written, write_plan
from ledger.importers._report import Disposition, FileReport, Tally
from ledger.importers._source import Source, read_source
from ledger.naming import RolloutNameError, validate_session_id

__all__ = [
    "Progress",
    "Sources",
    "discover",
    "failed",
    "mark_unreadable",
    "report",
    "usable_id",
    "write_all",
]

Progress = Callable[[Path, int], None]
"""Called after each source file with its path and size (a progress bar's step)."""

Sources = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def discover(source: Sources) -> list[Path]:
    """Every ``*.jsonl`` file under the sources (a file is taken as it is), in a stable order."""
    sources = [source] if isinstance(source, str | os.PathLike) else list(source)
    out: list[Path] = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            for dirpath, dirs, names in os.walk(p):
                dirs.sort()
                out.extend(Path(dirpath, n) for n in sorted(names) if n.endswith(".jsonl"))
        else:
            out.append(p)
    return out


def usable_id(found: str | None) -> str | None:
    """The session id a source names, or ``None`` when it cannot name a rollout (an empty one):
    the file's own name stands in, as it does when no line names the session."""
    try:
        return validate_session_id(found) if found is not None else None
    except RolloutNameError:
        return None


def mark_unreadable(src: Source, tally: Tally) -> list[int]:
    """Account for blank, unreadable and non-object lines; the numbers of the other lines."""
    good: list[int] = []
    for n, o in enumerate(src.values, 1):
        if o is None:
            reason = src.problems.get(n, "unreadable")
            tally.mark(n, Disposition.BLANK if reason == "blank" else Disposition.DAMAGED, reason)
        elif not isinstance(o, dict):
            tally.mark(n, Disposition.DAMAGED, f"not a JSON object ({type(o).__name__})")
        else:
            good.append(n)
    return good


def guarded(tool: str, path: Path, convert: Callable[[Source, Tally], FileReport]) -> FileReport:
    """Convert one file; a file that cannot be read or converted is reported, never raised."""
    try:
        src = read_source(path)
    except OSError as exc:
        return FileReport(
            source=str(path),
            tool=tool,
            version=None,
            checksum="",
            bytes=0,
            lines=0,
            status="failed",
            dispositions={},
            note=f"could not read the file: {exc.strerror or exc}",
        )
    tally = Tally(src.lines)
    try:
        return convert(src, tally)
    except Exception as exc:  # one bad file never stops the others (reported, not raised)
        return failed(tool, src, tally, exc)


def failed(tool: str, src: Source, tally: Tally, exc: BaseException) -> FileReport:
    """The report of a file whose conversion raised: every line not yet accounted is damaged."""
    for n in tally.unaccounted():
        tally.mark(n, Disposition.DAMAGED, f"not imported: the file failed ({exc!r})")
    return report(tool, src, tally, [], None, note=f"import failed: {exc!r}", status="failed")


def write_all(plans: list[Plan], index: RootIndex, dry_run: bool) -> list[Written]:
    """Write each plan (or, in a dry run, say what would be written)."""
    return [write_plan(p, index, dry_run=dry_run) for p in plans]


def report(
    tool: str,
    src: Source,
    tally: Tally,
    written: list[Written],
    version: str | None,
    *,
    sessions: int = 0,
    children: int = 0,
    note: str = "",
    status: str | None = None,
) -> FileReport:
    """The report of one source file from its tally and what was written from it."""
    statuses = {w.status for w in written}
    if status is None:
        order = ("reimported", "appended", "imported", "unchanged")
        status = next((s for s in order if s in statuses), "imported")
    if not note:
        note = "; ".join(dict.fromkeys(w.note for w in written if w.note))
    paths = tuple(str(w.path) for w in written if w.path is not None and w.status != "unchanged")
    return FileReport(
        source=str(src.path),
        tool=tool,
        version=version,
        checksum=src.checksum,
        bytes=src.size,
        lines=src.lines,
        status=status,
        dispositions=tally.counts(),
        rollouts=paths,
        sessions=sessions,
        children=children,
        problems=tuple(tally.problems),
        unaccounted_lines=tuple(tally.unaccounted()),
        note=note,
    )


def provenance(tool: str, src: Source, **more: Any) -> dict[str, Any]:
    """Where a rollout came from: the tool, the file, its bytes (ADR 0128)."""
    return {
        "tool": tool,
        "path": str(src.path),
        "sha256": src.checksum,
        "bytes": src.size,
        "lines": src.lines,
        **{k: v for k, v in more.items() if v is not None},
    }
