"""The importers over real files (tests/data/import): every line accounted for, every rollout
verified, signatures and encrypted payloads byte for byte in the ledger, idempotent imports."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest

from ledger import (
    Compacted,
    DegradationKind,
    Reasoning,
    ReasoningRecord,
    SessionMeta,
    decode_record,
)
from ledger.importers import ImportReport, claude_code, codex
from replay import read_replay

DATA = Path(__file__).parent / "data" / "import"
README = (DATA / "README.md").read_text(encoding="utf-8")
TOOLS = {"claude-code": claude_code, "codex": codex}


def _readme_lines() -> dict[str, int]:
    rows = re.findall(r"^\| `([^`]+\.jsonl)` \|.*\| (\d+) \| `[0-9a-f]{64}` \|$", README, re.M)
    return {path: int(n) for path, n in rows}


def _census_lines(data: bytes) -> int:
    """Lines as a line-type census counts them: newline characters, and a last unended line."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[ImportReport, Path]]:
    out = {}
    for name, tool in TOOLS.items():
        root = tmp_path_factory.mktemp(f"root-{name}")
        out[name] = (tool.import_sessions(DATA / name, root), root)
    return out


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_line_is_accounted_for(
    tool: str, imported: dict[str, tuple[ImportReport, Path]]
) -> None:
    """Each sample file is read whole: its lines agree with the census count and with the
    provenance table, and unaccounted is 0 for every file."""
    report, _ = imported[tool]
    expected = {p: n for p, n in _readme_lines().items() if p.startswith(tool)}
    seen = {str(Path(f.source).relative_to(DATA)): f for f in report.files}
    assert set(seen) == set(expected)
    for rel, f in seen.items():
        assert f.lines == expected[rel] == _census_lines((DATA / rel).read_bytes()), rel
        assert f.unaccounted == 0, rel
        assert f.unaccounted_lines == ()
        assert f.status in ("imported", "appended") or "already holds" in f.note, (rel, f.note)
        assert sum(f.by_disposition().values()) == f.lines
        assert "damaged" not in f.dispositions, (rel, f.problems)
        assert "unknown" not in f.dispositions, (rel, f.problems)
    assert report.unaccounted == 0


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_rollout_verifies(tool: str, imported: dict[str, tuple[ImportReport, Path]]) -> None:
    """Every rollout an import wrote replays verified, with nothing degraded (but a compacted
    history), and its head
    names the source tool, version, path and sha256."""
    report, root = imported[tool]
    paths = sorted(root.glob("*.jsonl"))
    assert paths
    assert {str(p) for p in paths} == set(report.rollouts)
    for p in paths:
        replay = read_replay(p)
        assert replay.verified, (p.name, replay.degraded)
        kinds = {d.kind for d in replay.degraded}
        assert kinds <= {DegradationKind.REBUILT_FROM_COMPACTED}, replay.degraded
        head = decode_record(p.read_bytes().split(b"\n", 1)[0])
        assert isinstance(head, SessionMeta)
        origin = msgspec.json.decode(bytes(head.extra))["import"]
        assert origin["tool"] == tool
        assert re.fullmatch(r"[0-9a-f]{64}", origin["sha256"])
        assert Path(origin["path"]).is_file()


def _source_payloads(tool: str) -> set[str]:
    out: set[str] = set()
    for f in (DATA / tool).rglob("*.jsonl"):
        for line in f.read_bytes().splitlines():
            o = json.loads(line)
            if tool == "claude-code":
                for b in (o.get("message") or {}).get("content") or []:
                    if isinstance(b, dict) and b.get("type") == "thinking" and b["signature"]:
                        out.add(b["signature"])
            elif o.get("type") == "response_item" and o["payload"].get("type") == "reasoning":
                out.add(o["payload"]["encrypted_content"])
    return out


def _ledger_payloads(root: Path) -> set[str]:
    out: set[str] = set()
    for p in root.glob("*.jsonl"):
        blocks: list[Reasoning] = []
        for line in p.read_bytes().splitlines():
            r = decode_record(line)
            if isinstance(r, ReasoningRecord):
                blocks.append(r.reasoning)
            if isinstance(r, Compacted):
                blocks.extend(b for m in r.messages for b in m.reasoning)
        out.update(x for b in blocks for x in (b.signature, b.encrypted, b.placeholder) if x)
    return out


@pytest.mark.parametrize("tool", list(TOOLS))
def test_signatures_and_encrypted_reasoning_are_byte_exact(
    tool: str, imported: dict[str, tuple[ImportReport, Path]]
) -> None:
    """Every thinking signature (Claude Code) and encrypted reasoning payload (Codex) of the
    sources is found, as the same string, in a reasoning block of the ledger."""
    _, root = imported[tool]
    source = _source_payloads(tool)
    assert len(source) > 10
    assert source <= _ledger_payloads(root)


def test_importing_again_writes_nothing(
    tmp_path: Path, imported: dict[str, tuple[ImportReport, Path]]
) -> None:
    """A second import of the same sources leaves every rollout byte for byte and says why."""
    for name, tool in TOOLS.items():
        _, done = imported[name]
        root = tmp_path / name
        shutil.copytree(done, root)
        before = {p.name: p.read_bytes() for p in root.iterdir()}
        again = tool.import_sessions(DATA / name, root)
        assert {f.status for f in again.files} == {"unchanged"}
        assert all("nothing written" in f.note for f in again.files), again.files
        assert not again.written
        assert again.rollouts == ()
        assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_a_grown_source_continues_its_rollout(tmp_path: Path) -> None:
    """Claude Code appends to a live transcript: the later file continues the earlier import's
    rollout, which then holds what a fresh import of the later file holds."""
    base = DATA / "claude-code" / "2.1.7-task-subagent" / "incremental-subagents"
    first = claude_code.import_sessions(base / "turn-1.jsonl", tmp_path / "a")
    grown = claude_code.import_sessions(base / "turn-2.jsonl", tmp_path / "a")
    fresh = claude_code.import_sessions(base / "turn-2.jsonl", tmp_path / "b")
    assert [f.status for f in first.files] == ["imported"]
    assert [f.status for f in grown.files] == ["appended"]
    assert grown.rollouts == first.rollouts
    a, b = read_replay(grown.rollouts[0]), read_replay(fresh.rollouts[0])
    assert a.verified
    assert a.messages == b.messages


def test_a_rewritten_source_gets_a_new_rollout(tmp_path: Path) -> None:
    """A source whose earlier import is not a prefix of it is imported as a new session, and
    the earlier rollout is left as it was."""
    src = tmp_path / "s.jsonl"
    original = (
        DATA / "claude-code" / "2.1.29-hook-stop" / "d266fdf5-b6a3-46aa-8627-920959a0109a.jsonl"
    )
    src.write_bytes(original.read_bytes())
    first = claude_code.import_sessions(src, tmp_path / "root")
    before = Path(first.rollouts[0]).read_bytes()
    src.write_bytes(original.read_bytes().replace(b"What is 2+2?", b"What is 3+3?", 1))
    again = claude_code.import_sessions(src, tmp_path / "root")
    assert [f.status for f in again.files] == ["reimported"]
    assert again.rollouts != first.rollouts
    assert Path(first.rollouts[0]).read_bytes() == before
    assert read_replay(again.rollouts[0]).verified


def test_children_carry_their_coordinates(
    imported: dict[str, tuple[ImportReport, Path]],
) -> None:
    """The 2.1.7 subagent is a child of its session through the Task call that started it;
    the 2.0.76 warm-up agent and the prompt-suggestion agents are children without a
    delegation id (no coordinates: not replayable as-is)."""
    _, root = imported["claude-code"]
    heads = [decode_record(p.read_bytes().split(b"\n", 1)[0]) for p in root.glob("*.jsonl")]
    children = {
        h.session_id: h for h in heads if isinstance(h, SessionMeta) and h.parent_session_id
    }
    task = children["e9fb405b-169f-40eb-9396-7e75076f045d-a485154"]
    assert task.parent_session_id == "e9fb405b-169f-40eb-9396-7e75076f045d"
    assert task.delegation_id == "toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"
    assert task.agent_name == "solution-architect"
    others = [h for sid, h in children.items() if sid != task.session_id]
    assert len(others) == 6
    assert all(h.delegation_id is None for h in others)
    assert sum(h.agent_name == "prompt_suggestion" for h in others) == 5
