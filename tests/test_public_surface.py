"""The public surface: one home per name, and the examples use nothing else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ledger
import replay

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
PACKAGES = {"ledger": ledger, "replay": replay}


def test_no_name_is_exported_by_both_packages() -> None:
    """A public name has one home: `ledger` and `replay` export disjoint sets of names."""
    assert set(ledger.__all__) & set(replay.__all__) == set()


def test_the_reducer_is_public_on_the_read_side_only() -> None:
    """fold, apply and ReplayState are public in `replay`, as SPEC section 4 names them (the
    reducer's code lives in ledger.reducer, which the writer needs), and not in `ledger`."""
    for name in ("fold", "apply", "ReplayState"):
        assert name in replay.__all__
        assert name not in ledger.__all__, name


@pytest.mark.parametrize("package", list(PACKAGES))
def test_every_exported_name_exists(package: str) -> None:
    """Each name in __all__ is defined, so `from PACKAGE import *` works."""
    module = PACKAGES[package]
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_import_only_public_names(example: Path) -> None:
    """An example imports from the two packages' top level only, and only names in __all__."""
    tree = ast.parse(example.read_text(encoding="utf-8"))
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top not in PACKAGES:
                continue
            if node.module != top:
                private.append(node.module)
                continue
            private += [a.name for a in node.names if a.name not in PACKAGES[top].__all__]
        elif isinstance(node, ast.Import):
            private += [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
    assert private == []
