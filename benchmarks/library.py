"""The library's entry points as the benchmark finds them, or why each one is missing."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from benchmarks.report import Row

__all__ = ["Library"]


class Library:
    """The library's entry points, or why each one is not available yet."""

    def __init__(self) -> None:
        self.missing: dict[str, str] = {}
        self.writer: Any = self._find("RolloutWriter", ("ledger", "ledger.writer"))
        self.read_replay: Any = self._find("read_replay", ("replay", "replay.replay"))
        self.read_stop_facts: Any = self._find("read_stop_facts", ("replay", "replay.stop"))
        self.list_sessions: Any = self._find("list_sessions", ("replay", "replay.sessions"))

    def _find(self, name: str, modules: Sequence[str]) -> Any:
        errors = []
        for mod in modules:
            try:
                obj = getattr(importlib.import_module(mod), name, None)
            except Exception as exc:  # a half-written module must not stop the benchmark
                errors.append(f"{mod}: {type(exc).__name__}: {exc}")
                continue
            if obj is not None:
                return obj
            errors.append(f"{mod} has no {name}")
        self.missing[name] = "; ".join(errors)
        return None

    def na(self, section: str, case: str, name: str) -> Row:
        """The row that stands for a case whose entry point ``name`` is missing."""
        return Row(section, case, f"not available ({name})", status="n/a")
