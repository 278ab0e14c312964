"""`rollout ship`, `rollout index` and `rollout sql`: the fleet on object storage (ADR 0140).

The work is in :mod:`replay.fleet`; these commands parse, print and choose exit statuses. The
fleet extra's libraries are imported when a command runs, never when the command loads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replay._location import ObjectURL, is_url
from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_ERROR, EXIT_USAGE, CliError
from replay.cli._json import dump, time_json
from replay.cli._paths import path_json

if TYPE_CHECKING:
    from rich.text import Text

    from replay.fleet._ship import ShipItem

__all__ = ["SCHEDULER_HELP", "index_cmd", "scheduler_value", "ship_cmd", "sql_cmd"]

SCHEDULER_HELP = (
    "Where the work runs: 'local' (a Dask LocalCluster, the default), 'none' (this "
    "process), or a Dask scheduler's address (tcp://host:8786)."
)


def scheduler_value(value: str) -> str | None:
    """``--scheduler`` as :mod:`replay.fleet` takes it: ``None`` for this process."""
    text = value.strip()
    if not text:
        raise CliError("--scheduler is empty: give local, none, or an address", EXIT_USAGE)
    return None if text == "none" else text


def _item_json(item: ShipItem) -> dict[str, Any]:
    return {
        "path": path_json(item.path),
        "url": item.url,
        "action": str(item.action),
        "size": item.size,
        "moved": item.moved,
        "reason": item.reason or None,
    }


def _item_line(item: ShipItem) -> Text:
    from rich.text import Text

    from replay.fleet._ship import ShipAction

    style = {
        ShipAction.UPLOADED: "green",
        ShipAction.PRESENT: "cyan",
        ShipAction.WOULD_UPLOAD: "cyan",
        ShipAction.SKIPPED: "yellow",
        ShipAction.CONFLICT: "bold red",
        ShipAction.FAILED: "bold red",
    }[item.action]
    line = Text(f"{item.action.upper():<13}", style=style)
    line.append(item.path.name)
    if item.url is not None and item.action is not ShipAction.SKIPPED:
        line.append(f" -> {item.url}", style="dim")
    if item.moved:
        line.append("  (local copy deleted)", style="dim")
    if item.reason:
        line.append(f"  {item.reason}")
    return line


@subcommand("ship", json_output=True, short_help="Upload sealed rollouts to object storage.")
@click.option("--to", "to", required=True, metavar="URL", help="Destination: s3://bucket/prefix.")
@click.option("--move", is_flag=True, help="Delete each local copy once the remote one verified.")
@click.option("--dry-run", is_flag=True, help="Say what would be uploaded; change nothing.")
@click.option(
    "--include-unsealed", is_flag=True, help="Also ship sessions that have no stop point yet."
)
def ship_cmd(to: str, move: bool, dry_run: bool, include_unsealed: bool) -> None:
    """Upload the sealed rollouts under the (local) root to URL, create-only.

    Each file goes to URL/YYYY-MM-DD/<its name>. An object already there with the same bytes
    is skipped; one with other bytes is a conflict, never overwritten. Sessions a writer holds,
    or without a stop point, stay. With --move, a local copy is deleted only after the remote
    copy is verified. Safe to interrupt: run it again to finish. Exit 1 on a conflict or a
    failure.
    """
    from replay.fleet._ship import ship

    opts = state()
    if not is_url(to):
        raise CliError(f"--to {to!r} is not a URL: give s3://bucket/prefix", EXIT_USAGE)
    root = opts.local_root("ship")
    opts.existing_root()
    out = console()
    report = ship(
        root,
        to,
        move=move,
        dry_run=dry_run,
        include_unsealed=include_unsealed,
        progress=None if opts.json else lambda item: out.print(_item_line(item)),
    )
    if opts.json:
        click.echo(
            dump(
                {
                    "root": path_json(root),
                    "to": report.to,
                    "ok": report.ok,
                    "bytes_sent": report.bytes_sent,
                    "bytes_read_back": report.bytes_read_back,
                    "items": [_item_json(i) for i in report.items],
                }
            )
        )
    else:
        from replay.fleet._ship import ShipAction

        counts = ", ".join(f"{n} {a}" for a in ShipAction if (n := report.count(a)))
        out.print(
            f"{len(report.items)} rollout(s): {counts or 'none'}; {report.bytes_sent} bytes sent"
        )
    if not report.ok:
        exit_with(EXIT_ERROR)


def _fleet_root(url: str | None) -> str:
    root = url if url is not None else state().existing_root()
    text = os.fspath(root)
    if "\x00" in text:
        raise CliError("the root contains a NUL character", EXIT_USAGE)
    if not is_url(text) and not Path(text).is_dir():
        raise CliError(f"{text} is neither a URL nor a directory: give s3://bucket/prefix")
    return text


@subcommand("index", json_output=True, short_help="Write the fleet's Parquet index.")
@click.argument("url", required=False, metavar="[URL|DIR]")
@click.option("--rebuild", is_flag=True, help="Read every rollout again and replace the index.")
@click.option("--scheduler", default="local", show_default=True, help=SCHEDULER_HELP)
def index_cmd(url: str | None, rebuild: bool, scheduler: str) -> None:
    """Index every rollout under URL (default: the root) as Parquet, partitioned by day.

    Reads only the rollouts that are new or changed since the last run, each once and whole
    (stop facts, identity, verdict, message counts, token usage), and writes the rows under
    URL/.index/. `ls` and `sql` read it; it can always be rebuilt from the rollouts.
    """
    from replay.fleet._fleetwide import build_index
    from replay.fleet._sql import root_url

    opts = state()
    root = root_url(_fleet_root(url))
    report = build_index(root, rebuild=rebuild, scheduler=scheduler_value(scheduler))
    if opts.json:
        click.echo(
            dump(
                {
                    "root": report.root,
                    "objects": report.objects,
                    "indexed": report.indexed,
                    "unchanged": report.unchanged,
                    "removed": report.removed,
                    "written_at": time_json(report.written_at),
                    "parts": list(report.parts),
                    "errors": [{"url": u, "error": e} for u, e in report.errors],
                }
            )
        )
    else:
        out = console()
        out.print(
            f"{report.objects} rollout(s) under {report.root}: {report.indexed} indexed, "
            f"{report.unchanged} unchanged, {report.removed} gone; "
            f"{len(report.parts)} part(s) written"
        )
        for u, e in report.errors:
            out.print(f"not indexed: {u}: {e}", style="yellow")
    if report.errors:
        exit_with(EXIT_ERROR)


@subcommand("sql", json_output=True, short_help="Query the fleet with SQL (DuckDB).")
@click.argument("query", metavar="SQL")
def sql_cmd(query: str) -> None:
    """Run one DuckDB query over the fleet under the root (a URL or a directory).

    Two views: `sessions` (one row per rollout, from the index: see `rollout index`) and
    `records` (every line of every rollout, typed from the published JSON Schema, with the
    object's `url`). Prints a table, or with --json {"columns": [...], "rows": [[...]]}.
    """
    import duckdb

    from replay.fleet._sql import first_line, fleet_sql

    opts = state()
    root = opts.existing_root()
    with fleet_sql(root) as fleet:
        try:
            result = fleet.query(query)
        except duckdb.Error as exc:
            raise CliError(f"the query failed: {first_line(exc)}") from None
        note = fleet.note
    if opts.json:
        click.echo(
            dump(
                {
                    "root": root if isinstance(root, ObjectURL) else path_json(root),
                    "columns": list(result.columns),
                    "rows": [list(r) for r in result.rows],
                    "note": note,
                }
            )
        )
        return
    from rich.table import Table

    out = console()
    if note:
        console(stderr=True).print(note, style="yellow")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in result.columns:
        table.add_column(name, overflow="fold")
    for row in result.rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    out.print(table)
    out.print(f"({len(result.rows)} row(s))", style="dim")
