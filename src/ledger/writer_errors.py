"""What a writer promises and how it fails: durability levels and the writer's errors."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Final

from ledger.error_copies import CopiedAsRaised

__all__ = [
    "DEFAULT_DURABILITY",
    "Durability",
    "ForkError",
    "ReadBackError",
    "RolloutExistsError",
    "RolloutFileError",
    "WriterBusyError",
    "WriterClosedError",
    "WriterError",
    "WriterFailedError",
    "durability_arg",
]


class Durability(Enum):
    """How far a write goes before the writer counts it as done (ADR 0020)."""

    OS = "os"
    """Hand each batch to the operating system: survives the process being killed, not a crash
    of the machine."""
    BATCH = "batch"
    """``fsync`` after every write of batches: survives a machine crash up to the last batch
    written, costs one ``fsync`` per write (the batches due at once share one)."""
    DRAIN = "drain"
    """``fsync`` when :meth:`RolloutWriter.drain` (and so ``stop`` and ``close``) runs: what was
    drained survives a machine crash. The default."""


DEFAULT_DURABILITY: Final = Durability.DRAIN


class WriterError(CopiedAsRaised, Exception):
    """Base of the errors a :class:`RolloutWriter` raises; ``path`` names the rollout."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class WriterBusyError(WriterError):
    """Another writer (in this process or another) holds the rollout's lock."""


class WriterFailedError(WriterError):
    """Writing the rollout failed (disk full, permission, file removed); the cause is chained.

    The file stays readable up to its last complete record; records not yet written are lost
    and the writer accepts nothing more: close it and resume with :meth:`RolloutWriter.open`.
    """


class WriterClosedError(WriterError):
    """The writer was closed (or failed) and takes no more records."""


class RolloutExistsError(WriterError, FileExistsError):
    """A new rollout would overwrite an existing file; rollouts are never clobbered."""


class RolloutFileError(WriterError, OSError):
    """The system refused a file operation on a rollout (a full disk, a directory where a file
    belongs, permissions); ``errno`` and ``strerror`` are the system's, the message names the
    file and what was (not) left behind."""

    def __init__(self, message: str, path: str | os.PathLike[str], cause: OSError) -> None:
        super().__init__(message, path)
        self.errno = cause.errno
        self.strerror = cause.strerror
        self.filename = os.fspath(path)

    def __str__(self) -> str:
        return str(self.args[0])


class ReadBackError(WriterError):
    """``stop`` read the file back and it does not hold what this writer wrote, or is damaged.

    No checkpoint was written: a ``failed`` terminal record with the same reason was appended
    instead, so that the loss is on record and the session is never resumed as if whole.
    """


class ForkError(WriterError):
    """A session cannot be forked as asked: the source is not a rollout, is damaged before the
    fork point, has no such record, or (for a copy) its inherited conversation cannot be read.
    ``path`` names the source. Nothing was written."""


def durability_arg(value: object) -> Durability:
    """``value`` as a :class:`Durability`: a member or its value (``"drain"``), nothing else."""
    if isinstance(value, Durability):
        return value
    if isinstance(value, str):
        try:
            return Durability(value)
        except ValueError:
            pass
    known = ", ".join(f"Durability.{d.name}" for d in Durability)
    raise ValueError(f"durability {value!r} is not a Durability; use one of {known}")
