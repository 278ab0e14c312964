"""The command's exit statuses and the error it reports as one line (ADR 0040)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_OVER_BUDGET",
    "EXIT_USAGE",
    "EXIT_VERIFY_FAILED",
    "CliError",
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


class CliError(Exception):
    """A failure to report as one line on stderr, with the exit status to leave with."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
