"""`rollout grep`: regex search across sessions, one line per hit, grep's exit statuses."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger import Message, Reasoning, Role, StopKind, ToolCall
from replay.cli import cli
from rollout_files import START, RolloutBuilder

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def run(root: Path, *args: str) -> Result:
    """`rollout --root ROOT ARGS...` in process."""
    return CliRunner().invoke(cli, ["--root", str(root), *args])


def hits(result: Result) -> list[dict[str, object]]:
    """The JSON Lines of `grep --json`, parsed."""
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two sessions: a coder with text, a tool call, its output and reasoning; a writer."""
    root = tmp_path / "root"
    RolloutBuilder(root, session_id="aaaa1111", agent_name="coder").extend(
        [
            Message(role=Role.SYSTEM, content="You are careful."),
            Message(role=Role.USER, content="Find the flaky Test in\nsuite B."),
            Message(
                role=Role.ASSISTANT,
                reasoning=(Reasoning(text="The flaky test is probably timing."),),
                content="Running it.",
                tool_calls=(
                    ToolCall(id="c1", name="shell", arguments='{"cmd": "pytest -k flaky"}'),
                ),
            ),
            Message(role=Role.TOOL, tool_call_id="c1", content="1 failed: test_flaky_clock"),
        ]
    ).stop(StopKind.PAUSED).write()
    RolloutBuilder(
        root / "sub", session_id="bbbb2222", started_at=START - timedelta(days=30)
    ).extend([Message(role=Role.USER, content="Write a poem about a flaky test.")]).write()
    return root


def test_hits_in_text_arguments_and_outputs_one_line_each(root: Path) -> None:
    """Each field that matches gives one line: short id, line number, role, snippet."""
    result = run(root, "grep", "flaky")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines == [
        "aaaa1111:3:user: Find the flaky Test in suite B.",
        'aaaa1111:5:assistant/arguments(shell): {"cmd": "pytest -k flaky"}',
        "aaaa1111:6:tool: 1 failed: test_flaky_clock",
        "bbbb2222:2:user: Write a poem about a flaky test.",
    ]


def test_line_numbers_are_lines_of_the_file(root: Path) -> None:
    """The line number of a hit is the line of its record in the file."""
    (doc,) = hits(run(root, "grep", "--json", "test_flaky_clock"))
    path = Path(str(doc["path"]))
    assert path.is_absolute()
    line = path.read_text().splitlines()[int(str(doc["line"])) - 1]
    assert "test_flaky_clock" in line
    assert doc["role"] == "tool"
    assert doc["field"] == "output"
    assert doc["match"] == "test_flaky_clock"
    assert doc["rollout_json"] == 1


def test_role_session_since_and_case_filters(root: Path) -> None:
    """--role, --session, --since and --ignore-case narrow or widen what is searched."""
    assert [h["role"] for h in hits(run(root, "grep", "--json", "flaky", "--role", "tool"))] == [
        "tool"
    ]
    only_b = hits(run(root, "grep", "--json", "flaky", "--session", "bbbb"))
    assert {h["session_id"] for h in only_b} == {"bbbb2222"}
    recent = hits(run(root, "grep", "--json", "flaky", "--since", START.date().isoformat()))
    assert {h["session_id"] for h in recent} == {"aaaa1111"}
    assert run(root, "grep", "TEST IN").exit_code == 1
    assert run(root, "grep", "-i", "TEST IN").exit_code == 0


def test_reasoning_is_searched_only_when_asked(root: Path) -> None:
    """Reasoning text is private to the model: searched with --reasoning only."""
    assert run(root, "grep", "timing").exit_code == 1
    (doc,) = hits(run(root, "grep", "--reasoning", "--json", "timing"))
    assert doc["field"] == "reasoning"
    assert doc["role"] == "assistant"


def test_exit_statuses_follow_grep(root: Path, tmp_path: Path) -> None:
    """0 with hits, 1 with none, 2 for a bad pattern, an unknown session or a missing root."""
    assert run(root, "grep", "flaky").exit_code == 0
    none = run(root, "grep", "no such words")
    assert (none.exit_code, none.stdout, none.stderr) == (1, "", "")
    for args in (("grep", "("), ("grep", "x", "--session", "zzzz")):
        bad = run(root, *args)
        assert bad.exit_code == 2, args
        assert bad.stderr.count("\n") == 1
    assert run(tmp_path / "missing", "grep", "x").exit_code == 2


def test_an_unreadable_file_is_reported_and_the_others_searched(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be read (here: vanished) is named on stderr; the rest is searched; 2."""
    from replay.cli.commands import grep

    real_open = grep.open_rollout
    coder = next(root.glob("*_coder.jsonl"))

    def vanishing(path: Path) -> object:
        if Path(path) == coder:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_open(path)

    monkeypatch.setattr(grep, "open_rollout", vanishing)
    result = run(root, "grep", "flaky")
    assert result.exit_code == 2
    assert result.stdout.splitlines() == ["bbbb2222:2:user: Write a poem about a flaky test."]
    assert "No such file or directory" in result.stderr
    assert coder.name in result.stderr


def test_snippets_are_one_line_and_never_carry_control_characters(tmp_path: Path) -> None:
    """A hit in text full of newlines and terminal controls prints as one safe line."""
    evil = "before\n\n\x1b]52;c;SGVsbG8=\x07 secret \x1b[2J\r\x9b31m after\n" + "x" * 500
    RolloutBuilder(tmp_path, session_id="evil").add(Message(role=Role.USER, content=evil)).write()
    result = run(tmp_path, "grep", "secret")
    assert result.exit_code == 0
    (line,) = result.stdout.splitlines()
    assert CONTROLS.findall(line) == []
    assert "secret" in line
    assert len(line) < 200
    (doc,) = hits(run(tmp_path, "grep", "--json", "secret"))
    assert "\n" not in str(doc["snippet"])


def test_grep_streams_without_rebuilding_conversations(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grep reads records as a stream: it never rebuilds, replays or lists sessions."""

    def forbidden(*_: object, **__: object) -> None:
        raise AssertionError("grep must stream, not rebuild")

    for name in ("read_replay", "list_sessions", "rebuild"):
        for module in ("replay", "replay.replay", "replay.sessions", "ledger.reader"):
            monkeypatch.setattr(f"{module}.{name}", forbidden, raising=False)
    assert run(root, "grep", "flaky").exit_code == 0


def test_compacted_messages_are_searched_and_labelled(tmp_path: Path) -> None:
    """Text that survives only in a compaction is found, and the label says where it was."""
    RolloutBuilder(tmp_path, session_id="comp").add(
        Message(role=Role.USER, content="old")
    ).compacted([Message(role=Role.USER, content="summary: the needle")]).write()
    result = run(tmp_path, "grep", "needle")
    assert result.stdout.splitlines() == ["comp:3:user/compacted/text: summary: the needle"]
