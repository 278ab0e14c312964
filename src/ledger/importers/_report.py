"""What an import did: per source file, every line and what became of it (ADR 0127)."""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Any

import attrs

__all__ = ["Disposition", "FileReport", "ImportReport", "Problem", "Tally"]


class Disposition(StrEnum):
    """What became of one line of a source file."""

    IMPORTED = "imported"
    """It became (part of) a record; the detail names the record type."""
    METADATA = "metadata"
    """Kept as metadata: in ``session_meta`` or a ``meta_update``."""
    CHILD = "child"
    """Moved into the rollout of a delegated child (an inline sidechain)."""
    DUPLICATE = "duplicate"
    """Dropped: a mirror of what another line already holds."""
    STATE = "state"
    """Dropped: state that is not the conversation (snapshots, UI traces, a queue)."""
    BRANCH = "branch"
    """Dropped: on a branch the session left (not on the path to its last message)."""
    UNKNOWN = "unknown"
    """A line type this importer does not know: counted and kept out, never fatal."""
    DAMAGED = "damaged"
    """Unreadable: not JSON, not an object, or a shape the importer cannot take."""
    BLANK = "blank"
    """An empty line."""


@attrs.frozen
class Problem:
    """A line the importer could not take whole, and why."""

    line: int
    reason: str


class Tally:
    """The running account of one source file: one disposition per line, with a reason."""

    def __init__(self, lines: int) -> None:
        self.lines = lines
        self.fates: list[tuple[Disposition, str] | None] = [None] * lines
        self.problems: list[Problem] = []

    def mark(self, line: int, disposition: Disposition, detail: str) -> None:
        """Say what became of ``line`` (1-based); a later mark replaces an earlier one."""
        self.fates[line - 1] = (disposition, detail)
        if disposition in (Disposition.DAMAGED, Disposition.UNKNOWN):
            self.problems.append(Problem(line, f"{disposition}: {detail}"))

    def counts(self) -> dict[str, dict[str, int]]:
        """Lines by disposition, then by detail (a record type or a reason)."""
        out: dict[str, Counter[str]] = {}
        # Counted in one pass over the (few distinct) fates, not one step per line.
        for fate, n in Counter(self.fates).items():
            if fate is not None:
                out.setdefault(fate[0].value, Counter())[fate[1]] += n
        return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}

    def unaccounted(self) -> list[int]:
        """The lines nothing was said about (always empty when the importer is right)."""
        return [i + 1 for i, fate in enumerate(self.fates) if fate is None]


@attrs.frozen
class FileReport:
    """One source file: its lines, what became of each, and the rollouts written from it.

    ``checksum`` is the sha256 of the file's bytes. ``status`` is ``imported``, ``appended``
    (the source grew and its rollout was continued), ``reimported`` (the source was rewritten:
    a new rollout), ``unchanged`` (imported before, nothing written) or ``failed``; a dry run
    says what it would have done.
    """

    source: str
    tool: str
    version: str | None
    checksum: str
    bytes: int
    lines: int
    status: str
    dispositions: dict[str, dict[str, int]]
    rollouts: tuple[str, ...] = ()
    sessions: int = 0
    children: int = 0
    problems: tuple[Problem, ...] = ()
    unaccounted_lines: tuple[int, ...] = ()
    note: str = ""

    @property
    def unaccounted(self) -> int:
        """Lines read that no disposition accounts for: 0 unless the importer has a bug."""
        counted = sum(sum(d.values()) for d in self.dispositions.values())
        return self.lines - counted

    def by_disposition(self) -> dict[str, int]:
        """Lines by disposition."""
        return {k: sum(v.values()) for k, v in self.dispositions.items()}

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON values."""
        return {
            "source": self.source,
            "tool": self.tool,
            "version": self.version,
            "sha256": self.checksum,
            "bytes": self.bytes,
            "lines": self.lines,
            "unaccounted": self.unaccounted,
            "status": self.status,
            "rollouts": list(self.rollouts),
            "sessions": self.sessions,
            "children": self.children,
            "counts": self.by_disposition(),
            "dispositions": self.dispositions,
            "problems": [{"line": p.line, "reason": p.reason} for p in self.problems],
            "note": self.note,
        }


@attrs.frozen
class ImportReport:
    """Every source file of one import, in the order they were read."""

    tool: str
    files: tuple[FileReport, ...]
    dry_run: bool = False

    @property
    def lines(self) -> int:
        """Lines read over all files."""
        return sum(f.lines for f in self.files)

    @property
    def unaccounted(self) -> int:
        """Lines no disposition accounts for, over all files (always 0)."""
        return sum(f.unaccounted for f in self.files)

    @property
    def rollouts(self) -> tuple[str, ...]:
        """The rollouts written (or, in a dry run, that would be)."""
        return tuple(r for f in self.files for r in f.rollouts)

    @property
    def written(self) -> bool:
        """Whether anything was written."""
        return not self.dry_run and any(
            f.status in ("imported", "appended", "reimported") for f in self.files
        )

    def by_disposition(self) -> dict[str, int]:
        """Lines by disposition over all files."""
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.by_disposition())
        return dict(sorted(total.items()))

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON values: totals, then one object per source file."""
        return {
            "tool": self.tool,
            "dry_run": self.dry_run,
            "files": len(self.files),
            "lines": self.lines,
            "unaccounted": self.unaccounted,
            "sessions": sum(f.sessions for f in self.files),
            "children": sum(f.children for f in self.files),
            "rollouts": list(self.rollouts),
            "counts": self.by_disposition(),
            "sources": [f.to_json() for f in self.files],
        }
