"""`rollout verify`: each session's digest and damage, with the library's verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import click

from ledger.damage import Degradation
from ledger.locking import writer_active
from replay._location import Location, ObjectURL
from replay.cli._app import console, exit_with, state, subcommand
from replay.cli._errors import EXIT_VERIFY_FAILED
from replay.cli._json import degradation_json, dump
from replay.cli._paths import path_json
from replay.cli._render import short_id
from replay.cli.commands.fleet import SCHEDULER_HELP, scheduler_value
from replay.cli.commands.reading import shown_path
from replay.replay import read_replay
from replay.sessions import SessionFlag, list_sessions
from replay.verdict import Verdict, verify_replay

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["verify"]

_PROGRESS_FROM: Final = 8


@attrs.frozen
class _Result:
    """One file's verdict, as printed and as JSON."""

    path: Location
    session_id: str | None
    verdict: Verdict
    verified: bool = False
    digest: str | None = None
    messages: int | None = None
    checkpoint_messages: int | None = None
    degraded: tuple[Degradation, ...] = ()
    reasons: tuple[str, ...] = ()
    error: str | None = None

    def json(self) -> dict[str, Any]:
        return {
            "path": path_json(self.path),
            "session_id": self.session_id,
            "status": str(self.verdict),
            "verified": self.verified,
            "digest": self.digest,
            "messages": self.messages,
            "degraded": [degradation_json(d) for d in self.degraded],
            "problems": list(self.reasons),
            "error": self.error,
        }


def _check(path: Location, duplicate: str | None, root: Path | None) -> _Result:
    try:
        # A writer seen before or after the read may have been mid-write during it.
        live = writer_active(path)
        rep = read_replay(path, whole_file=True, root=root)
        live = live or writer_active(path)
    except OSError as exc:
        # Vanished or unreadable since the walk: this file fails, the others are still checked.
        why = f"cannot read the file: {exc.strerror or exc}"
        return _Result(
            path=path, session_id=None, verdict=Verdict.FAILED, reasons=(why,), error=why
        )
    verification = verify_replay(rep, live=live)
    reasons = tuple(str(d) for d in verification.reasons)
    verdict = verification.verdict
    if duplicate is not None:
        verdict = Verdict.FAILED
        reasons = (duplicate, *(reasons if verification.verdict is Verdict.FAILED else ()))
    cp = rep.checkpoint
    return _Result(
        path=path,
        session_id=rep.session_id,
        verdict=verdict,
        verified=rep.verified,
        digest=cp.digest if cp is not None else None,
        messages=rep.total_messages,
        checkpoint_messages=cp.message_count if cp is not None else None,
        degraded=rep.degraded,
        reasons=reasons,
    )


def _line(result: _Result, root: Location) -> Text:
    from rich.text import Text

    style = {Verdict.OK: "green", Verdict.UNVERIFIED: "yellow", Verdict.FAILED: "bold red"}
    line = Text(f"{result.verdict.upper():<10} ", style=style[result.verdict])
    line.append(f"{short_id(result.session_id):<9}")
    line.append(shown_path(result.path, root), style="dim")
    if result.verdict is Verdict.OK and result.digest is not None:
        line.append(f"  {result.checkpoint_messages} messages, {result.digest[:19]}")
    elif result.reasons:
        more = f" (+{len(result.reasons) - 1} more)" if len(result.reasons) > 1 else ""
        line.append(f"  {result.reasons[0]}{more}")
    return line


@subcommand("verify", json_output=True, short_help="Check digests and damage; exit 1 on failure.")
@click.argument("paths", nargs=-1, metavar="[PATH|SESSION_ID]...")
@click.option("--all", "all_", is_flag=True, help="Verify every rollout under the root.")
@click.option("--strict", is_flag=True, help="Fail sessions that have no checkpoint to verify.")
@click.option(
    "--scheduler",
    default="local",
    show_default=True,
    help="With --all on a URL root: " + SCHEDULER_HELP,
)
def verify(paths: tuple[str, ...], all_: bool, strict: bool, scheduler: str) -> None:
    """Check each session's digest against its file and look for damage.

    One line per session: ok (digest verified, no damage), unverified (nothing to verify
    against, e.g. no checkpoint yet) or FAILED (digest mismatch, damaged lines, a file that
    cannot be read, or one of several files claiming one session id). Exit status 1 when any
    session failed (with --strict, also when any is unverified).
    """
    opts = state()
    if all_ and paths:
        raise click.UsageError("give PATH/SESSION_ID arguments or --all, not both")
    if not all_ and not paths:
        raise click.UsageError("give at least one PATH or SESSION_ID, or --all")
    duplicates: dict[Location, str] = {}
    root = opts.existing_root() if all_ else opts.root
    if all_ and isinstance(root, ObjectURL):
        _verify_fleet(root, scheduler_value(scheduler), strict)
        return
    if all_:
        entries = list_sessions(opts.existing_root(), on_error=opts.walk_error)
        files = sorted(e.path for e in entries)
        for e in entries:
            if SessionFlag.DUPLICATE_SESSION_ID in e.flags:
                duplicates[e.path] = (
                    f"another file under the root claims session id {e.session_id} "
                    f"[{SessionFlag.DUPLICATE_SESSION_ID}]"
                )
    else:
        files = [opts.target(p) for p in paths]
    out = console()
    results: list[_Result] = []

    def check(path: Location, emit: Callable[[Text], None]) -> None:
        result = _check(path, duplicates.get(path), opts.search_root())
        results.append(result)
        if not opts.json:
            emit(_line(result, opts.root))

    if not opts.json and len(files) >= _PROGRESS_FROM and out.is_terminal:
        from rich.progress import Progress

        with Progress(console=out, transient=True) as progress:
            task = progress.add_task("verifying", total=len(files))
            for path in files:
                check(path, progress.console.print)
                progress.advance(task)
    else:
        for path in files:
            check(path, out.print)
    failed = sum(
        r.verdict is Verdict.FAILED or (strict and r.verdict is Verdict.UNVERIFIED) for r in results
    )
    if opts.json:
        click.echo(
            dump({"ok": failed == 0, "failed": failed, "sessions": [r.json() for r in results]})
        )
    elif len(files) != 1:
        out.print(f"{len(files)} session(s) checked, {failed} failed")
    if failed:
        exit_with(EXIT_VERIFY_FAILED)


def _verify_fleet(root: ObjectURL, scheduler: str | None, strict: bool) -> None:
    """`verify --all` on a URL root: every object, on Dask unless told otherwise (ADR 0144)."""
    from replay.fleet import verify_fleet

    opts = state()
    raw = verify_fleet(root, scheduler=scheduler)
    claims: dict[str, int] = {}
    for r in raw:
        if r["session_id"] is not None:
            claims[r["session_id"]] = claims.get(r["session_id"], 0) + 1
    results = []
    for r in raw:
        verdict = Verdict(r["status"])
        reasons = tuple(r["problems"])
        if r["session_id"] is not None and claims[r["session_id"]] > 1:
            dupe = (
                f"another object under the root claims session id {r['session_id']} "
                f"[{SessionFlag.DUPLICATE_SESSION_ID}]"
            )
            reasons = (dupe, *(reasons if verdict is Verdict.FAILED else ()))
            verdict = Verdict.FAILED
        results.append(
            _Result(
                path=ObjectURL(r["url"]),
                session_id=r["session_id"],
                verdict=verdict,
                verified=r["verified"],
                digest=r["digest"],
                messages=r["messages"],
                checkpoint_messages=r["checkpoint_messages"],
                degraded=tuple(
                    Degradation(kind=d["kind"], detail=d["detail"], line=d["line"], seq=d["seq"])
                    for d in r["degraded"]
                ),
                reasons=reasons,
                error=r["error"],
            )
        )
    failed = sum(
        r.verdict is Verdict.FAILED or (strict and r.verdict is Verdict.UNVERIFIED) for r in results
    )
    if opts.json:
        click.echo(
            dump({"ok": failed == 0, "failed": failed, "sessions": [r.json() for r in results]})
        )
    else:
        out = console()
        for result in results:
            out.print(_line(result, root))
        out.print(f"{len(results)} session(s) checked, {failed} failed")
    if failed:
        exit_with(EXIT_VERIFY_FAILED)
