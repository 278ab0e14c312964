"""Where the `rollout` command looks: the root, and what a PATH or SESSION_ID argument names.

Kept apart from the click wiring so that the rules (ADR 0040) are plain functions: the root is
``--root``, else ``$ROLLOUT_HOME``, else ``~/.rollout``; a session id prefix resolves to exactly
one file under the root; nothing an argument names may lie outside the root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from ledger.naming import ROLLOUT_SUFFIX, RolloutNameError, parse_rollout_filename

__all__ = [
    "CliError",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_OVER_BUDGET",
    "EXIT_USAGE",
    "EXIT_VERIFY_FAILED",
    "existing_root",
    "parse_since",
    "resolve_root",
    "resolve_target",
    "rollout_files",
]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
"""Bad input or a failed operation: unknown session, missing root, unreadable file."""
EXIT_VERIFY_FAILED: Final = 1
"""`verify` (or `replay`) found a digest mismatch or damage; the same status as an error."""
EXIT_USAGE: Final = 2
"""The command line itself is wrong (click's convention)."""
EXIT_OVER_BUDGET: Final = 3
"""`replay --budget N`: the conversation is larger than N tokens; the hand-off report is out."""

_ID_PREFIX: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_MAX_LISTED: Final = 5


class CliError(Exception):
    """A failure to report as one line on stderr, with the exit status to leave with."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def _no_nul(value: str, what: str) -> str:
    if "\x00" in value:
        raise CliError(f"{what} {value!r} contains a NUL character")
    return value


def resolve_root(
    option: str | None, environ: os._Environ[str] | dict[str, str] | None = None
) -> Path:
    """The root: ``--root``, else ``$ROLLOUT_HOME`` (when not empty), else ``~/.rollout``."""
    env = os.environ if environ is None else environ
    if option:
        return Path(_no_nul(option, "--root")).expanduser()
    home = env.get("ROLLOUT_HOME", "")
    if home:
        return Path(_no_nul(home, "ROLLOUT_HOME")).expanduser()
    return Path.home() / ".rollout"


def existing_root(root: Path) -> Path:
    """``root`` if it is a directory; otherwise a :class:`CliError` that says how to get one."""
    if not root.exists():
        raise CliError(
            f"root {root} does not exist: pass --root DIR or set ROLLOUT_HOME "
            "(`rollout demo` writes a sample session there)"
        )
    if not root.is_dir():
        raise CliError(f"root {root} is not a directory: pass --root DIR or set ROLLOUT_HOME")
    return root


def rollout_files(root: Path) -> Iterator[Path]:
    """Every rollout file the listing sees under ``root``, in a stable order."""
    from replay.sessions import iter_rollout_paths

    yield from sorted(iter_rollout_paths(root))


def _looks_like_path(arg: str) -> bool:
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(s in arg for s in seps) or arg.endswith(ROLLOUT_SUFFIX) or arg in {".", ".."}


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def resolve_target(root: Path, arg: str, files: Iterable[Path] | None = None) -> Path:
    """The rollout file that ``arg`` names: a path under ``root``, or a session id prefix.

    A path (it has a separator or ends in ``.jsonl``) is taken relative to the working
    directory and must lie inside the root once symlinks are resolved. Anything else must be
    a session id prefix (letters, digits, ``-``): an exact id wins, otherwise the prefix must
    match exactly one file. ``files`` defaults to :func:`rollout_files` of the root.
    """
    _no_nul(arg, "argument")
    if not arg:
        raise CliError("an empty argument names no session: give a session id prefix or a path")
    if _looks_like_path(arg):
        path = Path(arg).expanduser()
        if not _inside(path, root):
            raise CliError(
                f"{arg} is outside the root {root}: pass --root with the directory that holds it"
            )
        if not path.is_file():
            raise CliError(f"{arg}: no such rollout file")
        return path
    if not _ID_PREFIX.fullmatch(arg):
        raise CliError(
            f"{arg!r} is neither a path nor a session id prefix "
            "(letters, digits and '-', starting with a letter or digit)"
        )
    existing_root(root)
    matches: list[tuple[str, Path]] = []
    for path in rollout_files(root) if files is None else files:
        try:
            parsed = parse_rollout_filename(path.name)
            sid = parsed.session_id or parsed.session_token
        except RolloutNameError:
            continue
        if sid.startswith(arg):
            matches.append((sid, path))
    # An exact id wins over longer ids it prefixes; two files with that exact id stay ambiguous.
    chosen = [m for m in matches if m[0] == arg] or matches
    if not chosen:
        raise CliError(
            f"no session under {root} has an id starting with {arg!r} (see `rollout ls`)"
        )
    if len(chosen) > 1:
        shown = ", ".join(f"{sid} ({p.name})" for sid, p in chosen[:_MAX_LISTED])
        more = f" and {len(chosen) - _MAX_LISTED} more" if len(chosen) > _MAX_LISTED else ""
        raise CliError(
            f"session id prefix {arg!r} is ambiguous under {root}: {len(chosen)} files match: "
            f"{shown}{more}; give more characters or the path"
        )
    found = chosen[0][1]
    if not _inside(found, root):
        # The listing already skips such links; a resolver must not rely on that alone.
        raise CliError(f"{found} points outside the root {root}; it is not read")
    return found


_DURATION: Final = re.compile(r"(?P<n>\d+)\s*(?P<unit>[smhdw])")
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """A ``--since`` value as an aware UTC datetime: a duration back from now, or a date/time.

    Durations are ``30m``, ``2h``, ``3d``, ``1w`` (also ``s``); dates are ISO 8601
    (``2026-12-01``, ``2026-12-01T08:00``), taken as UTC when they carry no offset.
    """
    text = value.strip()
    m = _DURATION.fullmatch(text)
    if m is not None:
        base = now or datetime.now(UTC)
        return base - timedelta(**{_UNITS[m["unit"]]: int(m["n"])})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"--since {value!r} is neither a duration (30m, 2h, 3d, 1w) "
            "nor an ISO date (2026-12-01, 2026-12-01T08:00)",
            EXIT_USAGE,
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
