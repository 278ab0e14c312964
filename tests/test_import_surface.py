"""The importers' place in the package: loaded only when imported, with a public face."""

from __future__ import annotations

import subprocess
import sys

import ledger.importers
from ledger.importers import claude_code, codex


def test_import_ledger_loads_no_importer() -> None:
    """`import ledger` loads neither the importers nor what they use (adapters, cattrs)."""
    code = (
        "import sys, ledger\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.startswith(('ledger.importers', 'ledger.providers', 'cattrs')))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_each_importer_has_the_same_face() -> None:
    """Both modules export import_sessions, their tool's name and its usual directory."""
    for module in (claude_code, codex):
        assert module.__all__ == ["TOOL", "default_source", "import_sessions"]
    assert (claude_code.TOOL, codex.TOOL) == ("claude-code", "codex")
    assert str(claude_code.default_source()).endswith(".claude/projects")
    assert str(codex.default_source()).endswith(".codex/sessions")
    assert set(ledger.importers.__all__) == {"Disposition", "FileReport", "ImportReport", "Problem"}
