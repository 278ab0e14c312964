"""Bad sources: truncated, corrupted and unknown-version files import what they can and report
the rest by line; one bad file never stops the others."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ledger.importers import claude_code, codex
from ledger.importers import claude_code as claude_module
from replay import read_replay

DATA = Path(__file__).parent / "data" / "import"
CLAUDE = DATA / "claude-code" / "2.0.76-compact-and-sidechain" / "sample_main_transcript.jsonl"
CODEX = next((DATA / "codex" / "0.77.0-exec-trimmed").rglob("*.jsonl"))


def test_a_truncated_file_imports_up_to_the_tear(tmp_path: Path) -> None:
    """A file cut in the middle of a line: the torn line is reported by number, the rest is
    imported and verifies."""
    data = CODEX.read_bytes()
    cut = data[: data.rfind(b"\n", 0, len(data) - 10) + 40]
    src = tmp_path / "torn.jsonl"
    src.write_bytes(cut)
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    assert f.unaccounted == 0
    torn = cut.count(b"\n") + 1
    assert [p.line for p in f.problems] == [torn]
    assert "not JSON" in f.problems[0].reason
    assert f.status == "imported"
    assert read_replay(f.rollouts[0]).verified


def test_corrupted_lines_are_reported_and_the_rest_imported(tmp_path: Path) -> None:
    """Invalid UTF-8, a flipped brace, a non-object line and a blank line in the middle of a
    transcript: each is accounted for on its own line; the conversation around them imports."""
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    lines[3] = b"\xff\xfe" + lines[3]
    lines[5] = lines[5].replace(b"{", b"[", 1)
    lines[7] = b"[1, 2, 3]\n"
    lines[9] = b"\n"
    src = tmp_path / "c45af7b1-cb7c-4e51-93db-8cbb250a877a.jsonl"
    src.write_bytes(b"".join(lines))
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    assert f.unaccounted == 0
    reasons = {p.line: p.reason for p in f.problems}
    assert sorted(reasons) == [4, 6, 8]
    assert "not UTF-8" in reasons[4]
    assert "not a JSON object" in reasons[8]
    assert f.by_disposition()["blank"] == 1
    assert f.by_disposition()["imported"] > 30
    assert read_replay(f.rollouts[0]).verified


def test_an_unknown_version_is_counted_not_fatal(tmp_path: Path) -> None:
    """A file of a newer tool version whose line types this importer does not know: every
    unknown line is counted with its type, and the lines it knows still import."""
    data = CODEX.read_bytes().replace(b'"type":"event_msg"', b'"type":"event_msg_v9"')
    src = tmp_path / "future.jsonl"
    src.write_bytes(data)
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    assert f.unaccounted == 0
    unknown = f.dispositions["unknown"]
    assert unknown == {"line type 'event_msg_v9' is unknown to this importer": data.count(b"v9")}
    assert f.by_disposition()["imported"] > 5


def test_one_bad_file_never_stops_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose conversion fails, and one that cannot be read, are reported as failed
    (every line of the first accounted as not imported), and the other files import."""
    tree = tmp_path / "projects"
    shutil.copytree(DATA / "claude-code" / "2.1.29-hook-stop", tree / "a")
    shutil.copytree(DATA / "claude-code" / "2.1.29-api-error-rate-limit", tree / "b")
    (tree / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")  # a file that cannot be read
    real = claude_module.convert_lines
    bad = "305d01e1-9f36-4024-87ff-a1fc2a7818e0"

    def boom(values, numbers, tally, session):  # type: ignore[no-untyped-def]
        if any(isinstance(v, dict) and v.get("sessionId") == bad for v in values):
            raise RuntimeError("simulated bug")
        return real(values, numbers, tally, session)

    monkeypatch.setattr(claude_module, "convert_lines", boom)
    report = claude_code.import_sessions(tree, tmp_path / "root")
    status = {Path(f.source).name: f for f in report.files}
    assert status[f"{bad}.jsonl"].status == "failed"
    assert "simulated bug" in status[f"{bad}.jsonl"].note
    assert status[f"{bad}.jsonl"].unaccounted == 0
    assert status[f"{bad}.jsonl"].by_disposition() == {"damaged": 6}
    assert status["c.jsonl"].status == "failed"
    assert "could not read" in status["c.jsonl"].note
    ok = [f for f in report.files if f.status == "imported"]
    assert len(ok) == 3
    assert report.unaccounted == 0
