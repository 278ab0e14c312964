"""`rollout demo`: write a sample session under the root, then list, verify, replay, resume it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from replay.cli._app import console, state, subcommand

__all__ = ["demo"]


@subcommand("demo", short_help="Write a sample session, then list, verify, replay and resume it.")
def demo() -> None:
    """Write a realistic session under the root, then list, verify, replay and resume it.

    A coding agent with a system prompt, user turns, signed reasoning, tool calls, a delegated
    child session in its own file, a compaction and a pause. Creates the root if needed.
    """
    from replay.cli._demo import run_demo

    root = state().local_root("demo")
    root.mkdir(parents=True, exist_ok=True)
    run_demo(console(), root, _how_invoked())


def _how_invoked() -> str:
    """The command as the user can type it again: `rollout` when on PATH, else its path."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "__main__.py":
        return "python -m replay"
    if argv0 is None or argv0.name != "rollout":
        return "rollout"
    found = shutil.which("rollout")
    if found is not None and Path(found).resolve() == argv0.resolve():
        return "rollout"
    try:
        return str(argv0.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(argv0)
