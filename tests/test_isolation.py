"""Tests never touch the real home directory (SPEC rule 7)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest


def _real_home() -> Path:
    return Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()


def test_home_is_a_fresh_temporary_directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Inside a test, HOME and ROLLOUT_HOME lie under pytest's temporary root, not the real home."""
    home = Path.home().resolve()
    assert home != _real_home(), "tests run against the real home: the autouse fixture is gone"
    assert home.is_relative_to(tmp_path_factory.getbasetemp().resolve())
    assert Path(os.environ["ROLLOUT_HOME"]).resolve().is_relative_to(home)


def test_each_test_gets_its_own_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The temporary home is empty when a test starts, so no test sees another's leftovers."""
    home = Path.home()
    assert list(home.iterdir()) == []
    (home / ".rollout").mkdir()
    (home / ".rollout" / "leftover.jsonl").write_bytes(b"{}\n")
