"""Bad sources: truncated, corrupted and unknown-version files import what they can and report
the rest by line; one bad file never stops the others."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

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


# --- one bad line costs that line only (an outside pass) ---------------------------------------

_SID = "0b7f3c2a-0000-0000-0000-000000000001"
_ENV = {"sessionId": _SID, "cwd": "/w", "version": "2.1.29", "timestamp": "2026-01-01T00:00:00Z"}
_U = {**_ENV, "type": "user", "uuid": "u1", "parentUuid": None}
_U |= {"message": {"role": "user", "content": "hi"}}
_A = {**_ENV, "type": "assistant", "uuid": "a1", "parentUuid": "u1"}
_A |= {"message": {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "yo"}]}}
_BLOCK = {"type": "tool_result", "tool_use_id": ["x"]}


def _jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "bad",
    [
        {**_ENV, "type": "attachment", "attachment": "oops"},
        {**_ENV, "type": ["user"]},
        {**_A, "uuid": ["a9"], "message": {**_A["message"], "id": "msg_9"}},
        {**_A, "uuid": "a9", "message": {**_A["message"], "id": ["m"]}},
        {"type": "last-prompt", "leafUuid": ["x"]},
        {**_U, "uuid": "u9", "parentUuid": "a1", "message": {"role": "user", "content": [_BLOCK]}},
        {**_U, "uuid": "c9", "parentUuid": "a1", "isCompactSummary": True}
        | {"message": {"role": "user", "content": None}},
        {**_A, "uuid": "e9", "parentUuid": "a1", "isApiErrorMessage": True}
        | {"message": {"id": "msg_e", "role": "assistant", "content": [{"type": "text"}]}}
        | {"message": {"id": "msg_e", "content": [{"type": "text", "text": None}]}},
    ],
)
def test_a_claude_line_of_the_wrong_types_is_damaged_alone(tmp_path: Path, bad: Any) -> None:
    """A line whose fields have the wrong types is reported damaged on its own line; the two
    good lines around it are still imported (the file does not fail)."""
    src = _jsonl(tmp_path / f"{_SID}.jsonl", [_U, _A, bad])
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    assert f.status == "imported", f.note
    assert [p.line for p in f.problems] == [3]
    assert f.by_disposition()["imported"] == 2
    assert [m.text() for m in read_replay(f.rollouts[0]).messages] == ["hi", "yo"]


def test_an_empty_session_id_falls_back_to_the_file_name(tmp_path: Path) -> None:
    """A first line naming the session "" names the rollout after the file, in a dry run and
    a real one alike (the dry run no longer promises what the import then refuses)."""
    src = _jsonl(tmp_path / f"{_SID}.jsonl", [{**_U, "sessionId": ""}, _A])
    dry = claude_code.import_sessions(src, tmp_path / "root", dry_run=True).files[0]
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    assert (dry.status, f.status) == ("imported", "imported"), f.note
    assert read_replay(f.rollouts[0]).session_id == _SID


def _codex_meta(**more: Any) -> dict[str, Any]:
    payload = {"id": "019b7f94-51b4-7593-922e-ba12b5b73b52", "cli_version": "0.77.0"}
    return {"timestamp": "t", "type": "session_meta", "payload": payload | more}


_ITEM = {"role": "user", "content": [{"type": "input_text", "text": "hi"}], "type": "message"}


@pytest.mark.parametrize(
    ("lines", "damaged"),
    [
        ([_codex_meta(source={"subagent": "review"})], []),
        ([_codex_meta(), {"timestamp": "t", "type": "event_msg", "payload": {"type": ["x"]}}], [3]),
        (
            [
                _codex_meta(),
                json.loads('{"type":"turn_context","payload":{"x":' + "[" * 70 + "]" * 70 + "}}"),
            ],
            [3],
        ),
    ],
)
def test_a_codex_line_of_the_wrong_types_is_damaged_alone(
    tmp_path: Path, lines: list[Any], damaged: list[int]
) -> None:
    """A review subagent's session_meta imports, and a line of the wrong types (an event type
    that is a list, settings nested too deep) is damaged on its own line, not the whole file."""
    item = {"timestamp": "t", "type": "response_item", "payload": _ITEM}
    src = _jsonl(tmp_path / "rollout-x.jsonl", [lines[0], item, *lines[1:]])
    (f,) = codex.import_sessions(src, tmp_path / "root").files
    assert f.status == "imported", f.note
    assert [p.line for p in f.problems] == damaged
    assert [m.text() for m in read_replay(f.rollouts[0]).messages] == ["hi"]


def test_one_unreadable_line_does_not_make_the_history_before_it_a_branch(
    tmp_path: Path,
) -> None:
    """A damaged line in the middle of the parentUuid chain is bridged: the messages before it
    are still imported, not dropped as an abandoned branch."""
    talk = [_U, _A, {**_U, "uuid": "u2", "parentUuid": "a1"}, {**_A, "uuid": "a2"}]
    talk[3] = talk[3] | {"parentUuid": "u2", "message": {**_A["message"], "id": "msg_2"}}
    talk.append({**_U, "uuid": "u3", "parentUuid": "a2"})
    src = tmp_path / f"{_SID}.jsonl"
    lines = [json.dumps(o) + "\n" for o in talk]
    lines[3] = "{not json\n"  # a2, the parent of u3
    src.write_text("".join(lines), encoding="utf-8")
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    assert "branch" not in f.by_disposition()
    assert [m.text() for m in read_replay(f.rollouts[0]).messages] == ["hi", "yo", "hi", "hi"]


def test_a_transcript_cut_after_a_compact_boundary_keeps_its_history(tmp_path: Path) -> None:
    """A compact_boundary with no summary after it (the file was cut) is not an empty
    compaction: the history before it replays, as Claude Code would resume it."""
    boundary = {**_ENV, "type": "system", "subtype": "compact_boundary", "uuid": "b1"}
    boundary |= {"parentUuid": None, "logicalParentUuid": "a1", "compactMetadata": {}}
    src = _jsonl(tmp_path / f"{_SID}.jsonl", [_U, _A, boundary])
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    replay = read_replay(f.rollouts[0])
    assert [m.text() for m in replay.messages] == ["hi", "yo"]
    assert not replay.degraded
    assert f.unaccounted == 0


def test_an_empty_signature_is_a_placeholder_never_sent_back(tmp_path: Path) -> None:
    """A thinking block whose signature is "" is kept as a placeholder (ADR 0126), never as a
    signature that a resumed request would send as real."""
    think = {"type": "thinking", "thinking": "Easy.", "signature": ""}
    a = {**_A, "message": {**_A["message"], "content": [think]}}
    a2 = {**_A, "uuid": "a2", "parentUuid": "a1"}
    src = _jsonl(tmp_path / f"{_SID}.jsonl", [_U, a, a2])
    (f,) = claude_code.import_sessions(src, tmp_path / "root").files
    (r,) = read_replay(f.rollouts[0]).messages[-1].reasoning
    assert (r.signature, r.placeholder) == (None, "")


def test_sources_that_are_not_regular_files_are_refused_not_read(tmp_path: Path) -> None:
    """A FIFO and a link to a device named *.jsonl in a tree are each reported failed without
    being read (no hang, no endless read); the regular file beside them imports."""
    tree = tmp_path / "src"
    tree.mkdir()
    os.mkfifo(tree / "a.jsonl")
    (tree / "b.jsonl").symlink_to("/dev/null")
    shutil.copy(CODEX, tree / "c.jsonl")
    a, b, c = codex.import_sessions(tree, tmp_path / "root").files
    assert (a.status, b.status, c.status) == ("failed", "failed", "imported")
    assert "not a regular file" in a.note
    assert "not a regular file" in b.note
