"""What the importers make of every sample, pinned: a change meant to make an import faster
must leave the converted sessions and the line accounting exactly as they were.

The pin is over the plans (the sessions converted, before the writer stamps sequence numbers
and times) and the reports, so that a change of the writer or of the file format does not move
it. After a change that is meant to alter what an import makes, regenerate the pins with
``python -m tests.test_import_golden`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ledger.importers import ImportReport, claude_code, codex
from ledger.importers._plan import Compaction, Plan, RootIndex, Written

DATA = Path(__file__).parent / "data" / "import"
PINS = Path(__file__).parent / "data" / "import-golden.json"
TOOLS = {"claude-code": claude_code, "codex": codex}


def _op(op: Any) -> Any:
    """An operation as the exact JSON text of its values (raw fields byte for byte)."""
    if isinstance(op, Compaction):
        extra = None if op.extra is msgspec.UNSET else bytes(op.extra).decode()
        messages = [msgspec.json.encode(m).decode() for m in op.messages]
        return {"compaction": messages, "summary": op.summary, "extra": extra}
    return [type(op).__name__, msgspec.json.encode(op).decode()]


def _plan(plan: Plan) -> dict[str, Any]:
    origin = {**plan.provenance, "path": Path(plan.provenance["path"]).relative_to(DATA).as_posix()}
    return {
        "session_id": plan.session_id,
        "agent_name": plan.agent_name,
        "parent_session_id": plan.parent_session_id,
        "delegation_id": plan.delegation_id,
        "meta": plan.meta,
        "provenance": origin,
        "ops": [_op(op) for op in plan.ops],
        "stop": plan.stop.value,
        "reason": plan.reason,
    }


def convert_all(monkeypatch: pytest.MonkeyPatch | None = None) -> dict[str, str]:
    """The sha256 of every sample's plans and report, by sample path (a dry run)."""
    plans: dict[str, list[dict[str, Any]]] = {}

    def capture(batch: list[Plan], index: RootIndex, dry_run: bool) -> list[Written]:
        for p in batch:
            key = Path(p.provenance["path"]).relative_to(DATA).as_posix()
            plans.setdefault(key, []).append(_plan(p))
        return [Written("imported", None, p.session_id) for p in batch]

    saved = {name: tool.write_all for name, tool in TOOLS.items()}
    for tool in TOOLS.values():
        if monkeypatch is not None:
            monkeypatch.setattr(tool, "write_all", capture)
        else:
            tool.write_all = capture  # type: ignore[assignment]
    try:
        reports: list[ImportReport] = [
            tool.import_sessions(DATA / name, DATA / "no-root", dry_run=True)
            for name, tool in TOOLS.items()
        ]
    finally:
        if monkeypatch is None:
            for name, tool in TOOLS.items():
                tool.write_all = saved[name]  # type: ignore[assignment]
    out: dict[str, str] = {}
    for report in reports:
        for f in report.files:
            key = Path(f.source).relative_to(DATA).as_posix()
            assert f.status != "failed", (key, f.note)  # the samples all import
            facts = {k: v for k, v in f.to_json().items() if k != "source"}
            held = {"report": facts, "plans": plans.get(key, [])}
            text = json.dumps(held, sort_keys=True, ensure_ascii=False)
            out[key] = hashlib.sha256(text.encode()).hexdigest()
    return dict(sorted(out.items()))


def test_every_sample_converts_as_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample's converted sessions and line accounting are exactly the pinned ones."""
    pinned = json.loads(PINS.read_text(encoding="utf-8"))
    now = convert_all(monkeypatch)
    assert set(now) == set(pinned)
    changed = [k for k in pinned if now[k] != pinned[k]]
    assert not changed, f"converted differently from the pins: {changed}"


if __name__ == "__main__":
    PINS.write_text(json.dumps(convert_all(), indent=1) + "\n", encoding="utf-8")
    sys.exit(0)
