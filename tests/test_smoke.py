"""The example in examples/ runs end to end."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_quickstart_example_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quickstart writes a session, rebuilds it exactly and verifies its digest."""
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), str(tmp_path)])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert len(list(tmp_path.glob("*.jsonl"))) == 1
