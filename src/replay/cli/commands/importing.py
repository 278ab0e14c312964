"""`rollout import claude-code|codex [SOURCE...]`: other tools' sessions as rollouts (ADR 0129)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_ERROR, CliError
from replay.cli._json import dump

if TYPE_CHECKING:
    from rich.table import Table

    from ledger.importers import ImportReport

__all__ = ["import_cmd"]

_TOOLS = ("claude-code", "codex")
_COLUMNS = ("imported", "metadata", "child", "duplicate", "state", "branch", "unknown", "damaged")


@subcommand("import", json_output=True, short_help="Import Claude Code or Codex CLI sessions.")
@click.argument("tool", type=click.Choice(_TOOLS))
@click.argument("sources", nargs=-1, metavar="[SOURCE]...")
@click.option("--dry-run", is_flag=True, help="Read and account for every line; write nothing.")
def import_cmd(tool: str, sources: tuple[str, ...], dry_run: bool) -> None:
    """Import Claude Code transcripts or Codex CLI rollouts as rollouts under the root.

    SOURCE is a file or a directory tree [default: ~/.claude/projects or ~/.codex/sessions].
    Every line of every file is accounted for: imported, kept as metadata, moved to a child,
    or dropped with a reason. Importing again writes nothing; a source that grew continues
    its rollout. Exit status 1 when a file could not be imported at all.
    """
    from ledger.importers import claude_code, codex

    module = claude_code if tool == "claude-code" else codex
    opts = state()
    root = opts.root
    if not isinstance(root, Path):
        raise CliError(
            f"rollouts are imported into a local directory, not {root}: import with --root DIR, "
            "then `rollout ship --to URL`"
        )
    paths = [Path(s) for s in sources] or [module.default_source()]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise CliError(f"{missing[0]}: no such file or directory: name a SOURCE to import")
    with _progress(paths, enabled=not opts.json) as step:
        report = module.import_sessions(paths, root, dry_run=dry_run, progress=step)
    if opts.json:
        click.echo(dump(report.to_json()))
    else:
        _summary(report, root)
    if any(f.status == "failed" for f in report.files):
        exit_with(EXIT_ERROR)


@contextmanager
def _progress(paths: list[Path], *, enabled: bool) -> Iterator[Callable[[Path, int], None] | None]:
    """A progress bar over the bytes of the sources, on a terminal only."""
    err = console(stderr=True)
    if not enabled or not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    total = sum(_size(p) for p in paths)
    with Progress(
        TextColumn("importing"), BarColumn(), DownloadColumn(), console=err, transient=True
    ) as bar:
        task = bar.add_task("import", total=total or None)
        yield lambda _path, size: bar.advance(task, size)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*.jsonl") if p.is_file())


def _summary(report: ImportReport, root: Path) -> None:
    out = console()
    out.print(_table(report))
    problems = [(f.source, p) for f in report.files for p in f.problems]
    for source, p in problems[:20]:
        out.print(f"{source}:{p.line}: {p.reason}", markup=False, highlight=False)
    if len(problems) > 20:
        out.print(f"... and {len(problems) - 20} more lines reported (see --json)")
    for f in report.files:
        if f.status == "failed":
            out.print(f"{f.source}: {f.note}", markup=False, highlight=False)
    where = "would be written under" if report.dry_run else "under"
    written = len(report.rollouts)
    out.print(
        f"{len(report.files)} file(s), {report.lines} line(s), {report.unaccounted} "
        f"unaccounted; {written} rollout(s) {where} {root}",
        markup=False,
        highlight=False,
    )


def _table(report: ImportReport) -> Table:
    from rich.table import Table

    totals = report.by_disposition()
    # The dispositions no line has would only widen the table.
    columns = [c for c in _COLUMNS if totals.get(c)]
    table = Table(title=f"import {report.tool}" + (" (dry run)" if report.dry_run else ""))
    table.add_column("source", overflow="fold")
    table.add_column("status")
    for name in ("lines", "sessions", "children", *columns):
        table.add_column(name, justify="right")
    for f in report.files:
        counts = f.by_disposition()
        row = [str(f.lines), str(f.sessions), str(f.children)]
        row += [str(counts.get(c, 0)) for c in columns]
        table.add_row(Path(f.source).name, f.status, *row)
    sessions = sum(f.sessions for f in report.files)
    children = sum(f.children for f in report.files)
    table.add_row(
        "total",
        "",
        str(report.lines),
        str(sessions),
        str(children),
        *(str(totals.get(c, 0)) for c in columns),
        style="bold",
    )
    return table
