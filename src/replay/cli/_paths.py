"""Where the `rollout` command looks: the root, and what a PATH or SESSION_ID argument names.

Kept apart from the click wiring so that the rules (ADR 0040, ADR 0044) are plain functions: the
root is ``--root``, else ``$ROLLOUT_HOME``, else ``~/.rollout`` (an empty value is a mistake,
never a silent default); an argument that looks like a path names that file wherever it is; any
other argument is a session id or prefix, resolved under the root by :func:`replay.find_session`
from file names only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from ledger.naming import ROLLOUT_SUFFIX
from replay._location import Location, ObjectURL, is_url
from replay.cli._errors import EXIT_USAGE, CliError
from replay.lookup import SessionLookupError, find_session

__all__ = [
    "existing_root",
    "looks_like_path",
    "parse_age",
    "parse_since",
    "path_json",
    "resolve_root",
    "resolve_target",
    "rollout_files",
]

_ENV: Final = "ROLLOUT_HOME"


def _no_nul(value: str, what: str) -> str:
    if "\x00" in value:
        raise CliError(f"{what} {value!r} contains a NUL character", EXIT_USAGE)
    return value


def resolve_root(option: str | None, environ: Mapping[str, str] | None = None) -> Location:
    """The root: ``--root``, else ``$ROLLOUT_HOME``, else ``~/.rollout``.

    A URL (``s3://bucket/prefix``, any fsspec scheme) is a root on object storage.

    An empty ``--root`` or an empty (or blank) ``ROLLOUT_HOME`` is a usage error: it is almost
    always a variable that was meant to be set, and falling back to the home directory would
    act on the wrong sessions. Unset ``ROLLOUT_HOME`` to use ``~/.rollout``.
    """
    env = os.environ if environ is None else environ
    if option is not None:
        if not option.strip():
            raise CliError(
                "--root is empty: give the directory that holds the rollouts", EXIT_USAGE
            )
        _no_nul(option, "--root")
        return ObjectURL(option.rstrip("/")) if is_url(option) else Path(option).expanduser()
    home = env.get(_ENV)
    if home is not None:
        if not home.strip():
            raise CliError(
                f"{_ENV} is set but empty: set it to the directory that holds the rollouts, "
                "or unset it to use ~/.rollout",
                EXIT_USAGE,
            )
        _no_nul(home, _ENV)
        return ObjectURL(home.rstrip("/")) if is_url(home) else Path(home).expanduser()
    return Path.home() / ".rollout"


def existing_root(root: Location) -> Location:
    """``root`` if it is a directory; otherwise a :class:`CliError` that says how to get one.

    A URL is taken as it is: the store says whether it exists when it is listed.
    """
    if isinstance(root, ObjectURL):
        return root
    if not root.exists():
        raise CliError(
            f"root {root} does not exist: pass --root DIR or set ROLLOUT_HOME "
            "(`rollout demo` writes a sample session there)"
        )
    if not root.is_dir():
        raise CliError(f"root {root} is not a directory: pass --root DIR or set ROLLOUT_HOME")
    return root


def rollout_files(root: Location) -> Iterator[Location]:
    """Every rollout file (or object) the listing sees under ``root``, in a stable order."""
    if isinstance(root, ObjectURL):
        from replay.fleet._store import list_objects, open_store

        yield from (o.url for o in list_objects(open_store(root)))
        return
    from replay.sessions import iter_rollout_paths

    yield from sorted(iter_rollout_paths(root))


def path_json(path: Location) -> str:
    """A path as ``--json`` output gives it everywhere: absolute, symlinks not resolved; bytes
    of a name that are not UTF-8 are shown as ``\\xNN`` (JSON text must be Unicode). An
    object's URL is given as it is."""
    if isinstance(path, ObjectURL):
        return str(path)
    text = os.path.abspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


_PATH_STARTS: Final = ("/", "./", "../", "~")


def looks_like_path(arg: str) -> bool:
    """Whether a PATH|SESSION_ID argument names a file rather than a session.

    A path ends in ``.jsonl``, starts with ``/``, ``./``, ``../`` or ``~``, or is ``.`` or
    ``..``, or is a URL (``s3://bucket/x.jsonl``). Anything else (``org/42`` included) is a
    session id or a prefix of one.
    """
    if is_url(arg):
        return True
    starts = _PATH_STARTS + tuple(s.replace("/", os.sep) for s in _PATH_STARTS if os.sep != "/")
    return arg.endswith(ROLLOUT_SUFFIX) or arg.startswith(starts) or arg in {".", ".."}


def resolve_target(root: Location, arg: str) -> Location:
    """The rollout file that ``arg`` names: a path wherever it is, or a session id or prefix.

    A path (:func:`looks_like_path`) is the user's choice and is read wherever it lies; it must
    exist. Anything else is resolved under ``root`` by :func:`replay.find_session`, which reads
    names only and never lets an id reach the file system or a link lead outside the root.
    """
    _no_nul(arg, "argument")
    if not arg:
        raise CliError("an empty argument names no session: give a session id prefix or a path")
    if is_url(arg):
        return ObjectURL(arg)
    if looks_like_path(arg):
        try:
            path = Path(arg).expanduser()
        except RuntimeError:  # `~name` for a user that does not exist: not a path, then
            path = None
        if path is not None and os.path.lexists(path):
            return path
        # A framework's key may look like a path (`chat.jsonl`, `~bob`, `/abs`): as no such
        # file exists, it may still name a session under the root.
        try:
            return find_session(existing_root(root), arg)
        except (SessionLookupError, CliError, OSError):
            raise CliError(
                f"{arg}: no such file, and no session under {root} has that id"
            ) from None
    try:
        return find_session(existing_root(root), arg)
    except SessionLookupError as exc:
        raise CliError(str(exc)) from None


_DURATION: Final = re.compile(r"(?P<n>[0-9]+)\s*(?P<unit>[smhdw])")
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """A ``--since`` value as an aware UTC datetime: a duration back from now, or a date/time.

    Durations are ``30m``, ``2h``, ``3d``, ``1w`` (also ``s``); dates are ISO 8601
    (``2026-12-01``, ``2026-12-01T08:00``), taken as UTC when they carry no offset. A value
    out of the calendar's range is a usage error, like any other bad value.
    """
    text = value.strip()
    m = _DURATION.fullmatch(text)
    try:
        if m is not None:
            base = now or datetime.now(UTC)
            return base - timedelta(**{_UNITS[m["unit"]]: int(m["n"])})
        when = datetime.fromisoformat(text)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:
        if m is None:  # a time the calendar holds, with an offset that takes it out in UTC
            raise CliError(
                f"--since {value!r} is out of range: UTC has no time for it (UTC runs from "
                "the year 1 to the year 9999); give a time inside that range",
                EXIT_USAGE,
            ) from None
        raise CliError(
            f"--since {value!r} is out of range: go back at most to the year 1", EXIT_USAGE
        ) from None
    except ValueError:
        if m is not None:  # more digits than int() accepts
            raise CliError(f"--since {value!r} is out of range", EXIT_USAGE) from None
        raise CliError(
            f"--since {value!r} is neither a duration (30m, 2h, 3d, 1w) "
            "nor an ISO date (2026-12-01, 2026-12-01T08:00)",
            EXIT_USAGE,
        ) from None


def parse_age(value: str, option: str = "--older-than") -> timedelta:
    """A duration such as ``30d``, ``12h``, ``2w`` or ``0d`` (``s`` and ``m`` too)."""
    m = _DURATION.fullmatch(value.strip())
    if m is None:
        raise CliError(
            f"{option} {value!r} is not a duration: give a number and a unit, as in 30d, 12h, "
            "2w (0d means all)",
            EXIT_USAGE,
        )
    try:
        return timedelta(**{_UNITS[m["unit"]]: int(m["n"])})
    except (OverflowError, ValueError):
        raise CliError(f"{option} {value!r} is out of range", EXIT_USAGE) from None
