"""Where a writer's read-backs start reading, whichever way they fold (ADR 0067, ADR 0164)."""

from __future__ import annotations

import os

import pytest

import ledger.readback as readback_module


def spy_read_back_starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the line each read-back starts reading at (1 for the file's first line)."""
    starts: list[int] = []
    real = readback_module._TallyFile.__init__

    def spy(self: readback_module._TallyFile, fd: int, start: int, crc: int) -> None:
        real(self, fd, start, crc)
        starts.append(os.pread(fd, start, 0).count(b"\n") + 1)

    monkeypatch.setattr(readback_module._TallyFile, "__init__", spy)
    return starts


def typed_read_backs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every read-back decode what it reads, as it does when the writer wrote anything a
    fold of undecoded lines does not take."""
    monkeypatch.setattr(readback_module, "_read_back_undecoded", lambda *args: None)
