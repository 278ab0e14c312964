"""The subcommands of `rollout`, one module per group; each declares its own with `subcommand`.

Adding a subcommand to a group is a change to that group's module. A new group is a new module
here, named in :data:`GROUPS`, whose order is the order of `rollout --help`.
"""

from types import ModuleType
from typing import Final

from replay.cli.commands import (
    demo,
    exporting,
    fleet,
    grep,
    history,
    importing,
    listing,
    reading,
    retention,
    schema,
    verify,
)

__all__ = ["GROUPS"]

GROUPS: Final[tuple[ModuleType, ...]] = (
    listing,
    reading,
    verify,
    grep,
    importing,
    exporting,
    fleet,
    history,
    retention,
    schema,
    demo,
)
