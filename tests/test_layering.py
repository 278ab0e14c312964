"""One-way dependencies (SPEC rule 5): `replay` imports `ledger`, never the reverse."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

LEDGER = Path(__file__).resolve().parents[1] / "src" / "ledger"


def _replay_imports(root: Path) -> list[str]:
    """Every import of `replay` (absolute, any form, at any depth) in the modules under ``root``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [str(node.args[0].value)]
            for name in names:
                if name == "replay" or name.startswith("replay."):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {name}")
    return found


def test_ledger_sources_never_import_replay() -> None:
    """No module under src/ledger imports `replay`, even lazily inside a function."""
    modules = list(LEDGER.rglob("*.py"))
    assert len(modules) >= 10, "the scan found too few ledger modules to mean anything"
    found = _replay_imports(LEDGER)
    assert found == [], (
        "ledger must not import replay (SPEC rule 5); move what both need into ledger:\n"
        + "\n".join(found)
    )


def test_importing_ledger_loads_no_replay_module() -> None:
    """A fresh interpreter that imports `ledger` (and its submodules) has no `replay` loaded."""
    code = (
        "import importlib, pkgutil, sys, ledger\n"
        "for m in pkgutil.iter_modules(ledger.__path__):\n"
        "    importlib.import_module('ledger.' + m.name)\n"
        "bad = sorted(m for m in sys.modules if m == 'replay' or m.startswith('replay.'))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_spec_one_liner_passes() -> None:
    """The check as the rule states it: `import ledger` leaves `replay` out of `sys.modules`."""
    code = (
        "import ledger, sys; "
        "assert not any(m == 'replay' or m.startswith('replay.') for m in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_scan_sees_every_form_of_import(tmp_path: Path) -> None:
    """The AST scan catches `import replay`, `from replay...`, lazy and importlib imports."""
    pkg = tmp_path / "ledger"
    pkg.mkdir()
    (pkg / "a.py").write_text("import replay\n", encoding="utf-8")
    (pkg / "b.py").write_text("from replay.stop import x\n", encoding="utf-8")
    (pkg / "c.py").write_text("def f():\n    import replay.view as v\n", encoding="utf-8")
    (pkg / "d.py").write_text("import importlib\nimportlib.import_module('replay')\n", "utf-8")
    (pkg / "e.py").write_text("from . import replayer\nimport replaying\n", encoding="utf-8")
    assert [f.split(":")[0] for f in _replay_imports(pkg)] == [
        "ledger/a.py",
        "ledger/b.py",
        "ledger/c.py",
        "ledger/d.py",
    ]


def test_importing_ledger_loads_no_command_line_library() -> None:
    """A framework that imports only `ledger` does not pay for click or rich."""
    code = (
        "import importlib, pkgutil, sys, ledger\n"
        "for m in pkgutil.iter_modules(ledger.__path__):\n"
        "    importlib.import_module('ledger.' + m.name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich'))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
