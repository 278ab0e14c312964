"""What the Codex importer makes of damaged and odd copies of its samples, pinned: a change meant
to move code (the line kinds split into modules of their own) must leave every plan and every
line's accounting exactly as it was.

The copies are made here from the samples by a seeded generator (lines dropped, repeated,
swapped, cut, emptied, given a BOM, a CR or a byte that is not UTF-8, a payload made bare, a
value of the wrong type put anywhere, events with nothing in them). The pins were taken with
the importer as it stood before that split. After a change meant to alter what an import makes,
regenerate them with ``python -m tests.test_review_codex_mutants`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ledger.importers import codex
from ledger.importers._plan import Compaction, Plan, RootIndex, Written

DATA = Path(__file__).parent / "data" / "import" / "codex"
PINS = Path(__file__).parent / "data" / "import-codex-mutants.json"
COPIES = 48
_ODD: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"type": "message"}, True, 2**70]
_EVENTS = [b"task_started", b"task_complete", b"turn_aborted", b"token_count", b"error", b"zzz"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            found += _paths(v, (*prefix, i))
    return found


def _odd_value(rng: random.Random, line: bytes) -> bytes:
    """The line with one value anywhere in it replaced by one of another type, or removed."""
    try:
        value = json.loads(line)
    except ValueError:
        return line
    paths = [p for p in _paths(value) if p]
    if not paths:
        return line
    path = rng.choice(paths)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if rng.random() < 0.7:
        parent[path[-1]] = rng.choice(_ODD)
    elif isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.pop(path[-1])
    return json.dumps(value, separators=(",", ":")).encode()


def _bare(line: bytes) -> bytes:
    """The line's payload without its envelope (the legacy layout, in a file of envelopes)."""
    try:
        value = json.loads(line)
    except ValueError:
        return line
    payload = value.get("payload") if isinstance(value, dict) else None
    return json.dumps(payload if isinstance(payload, dict) else value).encode()


def mutants(seed: int = 2026, count: int = COPIES) -> list[tuple[str, bytes]]:
    """``count`` damaged copies of the Codex samples (each cut to at most 120 lines), by name."""
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    samples = sorted(DATA.rglob("*.jsonl"))
    out: list[tuple[str, bytes]] = []
    for k in range(count):
        sample = samples[k % len(samples)]
        lines = sample.read_bytes().split(b"\n")
        if len(lines) > 120:
            at = rng.randrange(1, len(lines) - 100)
            lines = lines[:1] + lines[at : at + 100]
        for _ in range(rng.randrange(1, 7)):
            j = rng.randrange(len(lines))
            r = rng.random()
            if r < 0.45:
                lines[j] = _odd_value(rng, lines[j])
            elif r < 0.55:
                del lines[j]
            elif r < 0.62:
                lines.insert(j, lines[j])
            elif r < 0.68:
                lines[j] = lines[j][: rng.randrange(len(lines[j]) + 1)]
            elif r < 0.72:
                lines[j] += b"\r"
            elif r < 0.75:
                lines[j] = b"\xef\xbb\xbf" + lines[j]
            elif r < 0.78:
                lines[j] = lines[j].replace(b"a", b"\xff", 1)
            elif r < 0.84:
                m = rng.randrange(len(lines))
                lines[j], lines[m] = lines[m], lines[j]
            elif r < 0.88:
                lines.insert(j, b"")
            elif r < 0.94:
                lines[j] = _bare(lines[j])
            else:
                kind = rng.choice(_EVENTS)
                lines[j] = b'{"type":"event_msg","payload":{"type":"' + kind + b'"}}'
            if not lines:
                lines = [b""]
        out.append((f"{k:02d}-{sample.relative_to(DATA).parts[0]}.jsonl", b"\n".join(lines)))
    return out


def _op(op: Any) -> Any:
    if isinstance(op, Compaction):
        extra = None if op.extra is msgspec.UNSET else bytes(op.extra).decode()
        messages = [msgspec.json.encode(m).decode() for m in op.messages]
        return {"compaction": messages, "summary": op.summary, "extra": extra}
    return [type(op).__name__, msgspec.json.encode(op).decode()]


def convert(directory: Path, monkeypatch: pytest.MonkeyPatch | None = None) -> dict[str, str]:
    """The sha256 of each damaged copy's plans and line accounting, by name (a dry run)."""
    plans: list[Any] = []

    def capture(batch: list[Plan], index: RootIndex, dry_run: bool) -> list[Written]:
        for p in batch:
            plans.append(
                [p.session_id, p.parent_session_id, p.meta, p.stop.value, p.reason]
                + [_op(op) for op in p.ops]
            )
        return [Written("imported", None, p.session_id) for p in batch]

    saved = codex.write_all
    if monkeypatch is not None:
        monkeypatch.setattr(codex, "write_all", capture)
    else:
        codex.write_all = capture  # type: ignore[assignment]
    out: dict[str, str] = {}
    try:
        for name, data in mutants():
            path = directory / name
            path.write_bytes(data)
            plans.clear()
            report = codex.import_sessions(path, directory / "root", dry_run=True)
            [f] = report.files
            account = [f.status, f.lines, f.dispositions, [(p.line, p.reason) for p in f.problems]]
            text = json.dumps([plans, account], sort_keys=True, default=str)
            out[name] = hashlib.sha256(text.encode()).hexdigest()
    finally:
        if monkeypatch is None:
            codex.write_all = saved  # type: ignore[assignment]
    return out


def test_damaged_copies_of_the_codex_samples_import_as_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every damaged copy converts to the plans and line accounting pinned before the Codex
    line kinds were split into modules of their own."""
    pins = json.loads(PINS.read_text())
    got = convert(tmp_path, monkeypatch)
    assert len(got) == COPIES
    moved = sorted(name for name in got if got[name] != pins.get(name))
    assert not moved, (
        f"{moved} no longer import as pinned (python -m tests.test_review_codex_mutants)"
    )


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        pins = convert(Path(scratch))
    PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(pins)} pins to {PINS}", file=sys.stderr)
