"""`rollout schema`: the JSON Schema of one rollout line."""

from __future__ import annotations

import click

from replay.cli._app import subcommand

__all__ = ["schema"]


@subcommand("schema")
def schema() -> None:
    """Print the JSON Schema of one rollout line."""
    from ledger.schema import schema_bytes

    click.echo(schema_bytes().decode(), nl=False)
