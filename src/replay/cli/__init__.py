"""The `rollout` command: list, show, verify, replay, grep, tree, schema and demo.

A package (ADR 0043): the group and its global options in ``_app``, root and argument handling
in ``_paths``, drawing in ``_render``, the JSON shapes in ``_json``, and one module per group of
subcommands in :mod:`replay.cli.commands`. The console script is :func:`main`; ``python -m
replay`` runs the same.
"""

from replay.cli._app import RolloutCommand, cli, main
from replay.cli.commands import GROUPS

__all__ = ["cli", "main"]

for _group in GROUPS:
    for _command in vars(_group).values():
        if isinstance(_command, RolloutCommand):
            cli.add_command(_command)
