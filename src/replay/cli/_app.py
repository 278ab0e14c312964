"""The `rollout` group: global options, exit statuses, one-line errors, command registration.

Exit statuses: 0 ok; 1 an error or a failed verification; 2 a wrong command line; 3 `replay
--budget` over budget (ADR 0040); `grep` follows grep (ADR 0045). Every failure is one line on
stderr. The global options ``--root`` and ``--json`` are accepted before the subcommand and
after it (the later one wins). rich is imported inside the commands, so importing this module
(or ``replay``) stays light.

A subcommand is declared with :func:`subcommand` in a module of :mod:`replay.cli.commands`,
which gives it the global options; :mod:`replay.cli` adds them to the group (ADR 0043).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import click

from replay._location import Location
from replay.cli._errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from replay.cli._paths import existing_root, resolve_root, resolve_target
from replay.cli._render import safe_console, terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "RolloutCommand",
    "State",
    "cli",
    "console",
    "exit_with",
    "main",
    "state",
    "subcommand",
]

_DEBUG_ENV: Final = "ROLLOUT_DEBUG"
_PIPE_WIDTH: Final = 160
_ROOT_KEY: Final = "rollout.root"
_JSON_KEY: Final = "rollout.json"
_WALK_FAILED_KEY: Final = "rollout.walk_failed"
_STORAGE_KEY: Final = "rollout.storage_options"
_ARGV_KEY: Final = "rollout.argv"

F = TypeVar("F", bound=Callable[..., Any])


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(prog: str, message: str, code: int) -> int:
    click.echo(terminal_safe(f"{prog}: error: {_one_line(message)}"), err=True)
    return code


class _ReaderGone(Exception):  # noqa: N818 - a signal between two methods, not an error
    """Standard output's reader went away (a closed pipe); not an OSError, so that click's own
    handling of EPIPE (exit status 1) never sees it."""


class RolloutCommand(click.Command):
    """A subcommand that knows whether it has JSON output (the global ``--json`` needs one),
    and what status a directory it could not read under the root ends it with."""

    def __init__(
        self, *args: Any, json_output: bool = False, walk_error_status: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.json_output = json_output
        self.walk_error_status = walk_error_status

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command with the ``--storage-option`` values given (for this run only); a
        closed standard output ends it quietly, and a directory it could not read under the
        root ends it with a failure status."""
        options = ctx.meta.get(_STORAGE_KEY)
        if not options:
            return self._invoke(ctx)
        from replay.fleet._store import storage_options

        with storage_options(**options):
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        status: int | None = None
        try:
            rv = super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _ReaderGone from exc
        except click.exceptions.Exit as exc:
            status = exc.exit_code
            rv = None
        if ctx.meta.get(_WALK_FAILED_KEY):
            # Sessions were left out of what was printed: never a success status.
            raise click.exceptions.Exit(max(status or 0, self.walk_error_status))
        if status is not None:
            raise click.exceptions.Exit(status)
        return rv


class _RolloutGroup(click.Group):
    """A group whose failures are one line on stderr and an exit status, never a traceback."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        argv = (info_name or "rollout", *args)  # before parsing consumes them
        ctx = super().make_context(info_name, args, parent=parent, **extra)
        ctx.meta[_ARGV_KEY] = argv
        return ctx

    def list_commands(self, ctx: click.Context) -> list[str]:
        # The order the command modules register them in: the order an operator meets them.
        return list(self.commands)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if ctx.meta.get(_JSON_KEY) and cmd is not None and not getattr(cmd, "json_output", False):
            raise click.UsageError(f"`{name}` has no JSON output; leave out --json", ctx)
        return name, cmd, rest

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prog = prog_name or "rollout"
        code = self._run(args, prog, complete_var, **extra)
        if standalone_mode:
            code = _flush_stdout(code)
            sys.exit(code)
        return code

    def _run(
        self, args: Sequence[str] | None, prog: str, complete_var: str | None, **extra: Any
    ) -> int:
        try:
            rv = super().main(args, prog, complete_var, standalone_mode=False, **extra)
        except CliError as exc:
            return _fail(prog, exc.message, exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else prog
            hint = f" (see '{where} --help')" if exc.ctx is not None else ""
            return _fail(where, exc.format_message() + hint, EXIT_USAGE)
        except click.ClickException as exc:
            return _fail(prog, exc.format_message(), exc.exit_code)
        except click.Abort:
            click.echo(f"{prog}: interrupted", err=True)
            return 130
        except (BrokenPipeError, _ReaderGone):
            # `rollout ls | head -1`: the reader has what it wanted; say nothing, as cat does.
            _silence_stdout()
            return EXIT_OK
        except OSError as exc:
            return _fail(prog, _describe_os_error(exc), EXIT_ERROR)
        except Exception as exc:
            if os.environ.get(_DEBUG_ENV):
                raise
            return _fail(
                prog,
                f"internal error: {type(exc).__name__}: {exc} "
                f"(set {_DEBUG_ENV}=1 to see the traceback, and please report it)",
                EXIT_ERROR,
            )
        return rv if isinstance(rv, int) else EXIT_OK


def _flush_stdout(code: int) -> int:
    """Flush what is buffered now, so that a reader gone away is not reported at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except (OSError, ValueError):
        pass
    return code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _describe_os_error(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {what}" if exc.filename else what


def _remember_root(ctx: click.Context, _: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        ctx.meta[_ROOT_KEY] = value
    return value


def _remember_json(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_JSON_KEY] = True
    return value


def _remember_storage_options(
    ctx: click.Context, _: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    if values:
        from replay.cli._storage import parse_storage_option

        given = dict(parse_storage_option(v) for v in values)
        ctx.meta[_STORAGE_KEY] = {**ctx.meta.get(_STORAGE_KEY, {}), **given}
    return values


_root_option = click.option(
    "--root",
    metavar="DIR|URL",
    expose_value=False,
    callback=_remember_root,
    help="Directory of rollouts, or a URL such as s3://bucket/prefix "
    "[default: $ROLLOUT_HOME, else ~/.rollout].",
)
_storage_option = click.option(
    "--storage-option",
    metavar="KEY=VALUE",
    multiple=True,
    expose_value=False,
    callback=_remember_storage_options,
    help="An fsspec option for URL roots (endpoint_url=..., anon=true); repeatable.",
)
_json_option = click.option(
    "--json",
    is_flag=True,
    expose_value=False,
    callback=_remember_json,
    help="Print JSON (see docs/cli.md) instead of text.",
)


class State:
    """What the global options say, read when a command asks (so that they may come last)."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self._meta = meta

    @property
    def root(self) -> Location:
        """The root: --root, else $ROLLOUT_HOME, else ~/.rollout (a directory or a URL)."""
        return resolve_root(self._meta.get(_ROOT_KEY))

    def local_root(self, command: str) -> Path:
        """The root, which must be a local directory for ``command``."""
        root = self.root
        if not isinstance(root, Path):
            raise CliError(
                f"`{command}` works on a local directory, not on {root}: pass --root DIR",
                EXIT_USAGE,
            )
        return root

    @property
    def json(self) -> bool:
        """Whether --json was given, before or after the subcommand."""
        return bool(self._meta.get(_JSON_KEY))

    @property
    def argv(self) -> tuple[str, ...]:
        """The command line as given (the audit log records it)."""
        return tuple(self._meta.get(_ARGV_KEY, ("rollout",)))

    def existing_root(self) -> Location:
        """The root, which must be a directory (or a URL)."""
        return existing_root(self.root)

    def target(self, arg: str) -> Location:
        """The file a PATH|SESSION_ID argument names."""
        return resolve_target(self.root, arg)

    def walk_error(self, error: OSError) -> None:
        """A directory under the root could not be read: say so on stderr, go on, and make the
        command end with a failure status (its sessions are missing from what it printed)."""
        self._meta[_WALK_FAILED_KEY] = True
        where = error.filename if error.filename is not None else "?"
        click.echo(
            terminal_safe(
                f"rollout: warning: cannot read the directory {os.fsdecode(where)} "
                f"({error.strerror or error}): its sessions are left out"
            ),
            err=True,
        )

    @property
    def walk_failed(self) -> bool:
        """Whether :meth:`walk_error` was called."""
        return bool(self._meta.get(_WALK_FAILED_KEY))

    def search_root(self) -> Path | None:
        """The root when it is a local directory: where a fork's moved source is looked for."""
        root = self.root
        return root if isinstance(root, Path) and root.is_dir() else None

    def local_target(self, arg: str, what: str) -> Path:
        """The local file a PATH|SESSION_ID argument names, for ``what`` (a command that writes)."""
        target = self.target(arg)
        if not isinstance(target, Path):
            raise CliError(f"{what} works on local files, not on {target}")
        return target


def state() -> State:
    """The global options of the command being run."""
    return State(click.get_current_context().meta)


def subcommand(
    name: str, *, json_output: bool = False, **attrs: Any
) -> Callable[[F], RolloutCommand]:
    """Declare a subcommand, with ``--root`` (and ``--json`` when it prints JSON).

    :mod:`replay.cli` adds every subcommand its command modules declare to the group.
    """

    def decorate(f: F) -> RolloutCommand:
        f = _storage_option(_root_option(f))
        if json_output:
            f = _json_option(f)
        return click.command(name, cls=RolloutCommand, json_output=json_output, **attrs)(f)

    return decorate


def console(stderr: bool = False) -> Console:
    """A console that never sends control characters from a file, plain and wide when piped."""
    # Colour and width follow the terminal; piped output is plain text, wide enough that
    # table rows are not cut (an inherited COLUMNS describes some other terminal).
    c = safe_console(stderr=stderr, highlight=False, soft_wrap=True)
    if not c.is_terminal:
        c.width = _PIPE_WIDTH
    return c


def exit_with(code: int) -> NoReturn:
    """Leave the command with ``code`` (after its output)."""
    raise click.exceptions.Exit(code)


@click.group(
    cls=_RolloutGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@_root_option
@_storage_option
@_json_option
@click.version_option(package_name="rollout-ledger", prog_name="rollout")
def cli() -> None:
    """Inspect, verify and replay the rollouts (append-only JSONL session ledgers) of LLM agents.

    Exit status: 0 ok; 1 error or failed verification; 2 bad usage; 3 replay over budget
    (grep: 0 hits, 1 none, 2 trouble). --root and --json may also follow the subcommand.
    """


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: run the command and exit with its status."""
    cli.main(args=argv, prog_name="rollout")
