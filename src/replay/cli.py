"""The `rollout` command: list, show, verify, replay, tree, schema and demo (ADR 0040).

Exit statuses: 0 ok; 1 an error or a failed verification; 2 a wrong command line; 3 `replay
--budget` over budget (the hand-off report is printed). Every failure is one line on stderr.
rich is imported inside the commands, so importing this module (or ``replay``) stays light.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from replay._cli_paths import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    existing_root,
    resolve_root,
    resolve_target,
)

__all__ = ["cli", "main"]

_DEBUG_ENV = "ROLLOUT_DEBUG"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(prog: str, message: str, code: int) -> int:
    click.echo(f"{prog}: error: {_one_line(message)}", err=True)
    return code


class _RolloutGroup(click.Group):
    """A group whose failures are one line on stderr and an exit status, never a traceback."""

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
        except BrokenPipeError:
            # `rollout ls | head`: the reader went away; say nothing more.
            _silence_stdout()
            return EXIT_ERROR
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


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _describe_os_error(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    return f"{exc.filename}: {what}" if exc.filename else what


class _Ctx:
    """What the group hands to its commands."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def existing_root(self) -> Path:
        return existing_root(self.root)

    def target(self, arg: str) -> Path:
        return resolve_target(self.root, arg)


pass_ctx = click.make_pass_decorator(_Ctx)


@click.group(
    cls=_RolloutGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--root",
    metavar="DIR",
    help="Directory of rollouts [default: $ROLLOUT_HOME, else ~/.rollout].",
)
@click.version_option(package_name="rollout-ledger", prog_name="rollout")
@click.pass_context
def cli(ctx: click.Context, root: str | None) -> None:
    """Inspect, verify and replay the rollouts (append-only JSONL session ledgers) of LLM agents.

    Exit status: 0 ok; 1 error or failed verification; 2 bad usage; 3 replay over budget.
    """
    ctx.obj = _Ctx(resolve_root(root))


def _exit(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


@cli.command()
def schema() -> None:
    """Print the JSON Schema of one rollout line."""
    from ledger.schema import schema_bytes

    click.echo(schema_bytes().decode(), nl=False)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: run the command and exit with its status."""
    cli.main(args=argv, prog_name="rollout")
