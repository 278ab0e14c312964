"""The hand-off report: a Markdown summary rendered from a replay, without the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import ErrorDetail, Message, Role, StopKind, ToolCall
from replay import ReplayTooLarge, handoff_report, read_replay
from rollout_files import RolloutBuilder, conversation


def test_report_from_a_too_large_replay_needs_no_file(tmp_path: Path) -> None:
    """The replay carried by ReplayTooLarge renders a report after the file is gone."""
    ms = [
        *conversation(3),
        Message(role=Role.USER, content="now fix the failing test"),
        Message(
            role=Role.ASSISTANT,
            tool_calls=(ToolCall(id="c-open", name="run_tests", arguments='{"k": "fail"}'),),
        ),
    ]
    b = RolloutBuilder(tmp_path, session_id="big-1", agent_name="coder").extend(ms)
    path = b.checkpoint().terminal(StopKind.FAILED, "budget check").write()
    with pytest.raises(ReplayTooLarge) as info:
        read_replay(path, token_budget=10)
    path.unlink()
    report = handoff_report(info.value.replay)
    assert report.startswith("# Hand-off: session big-1 (coder)")
    assert "## Goal" in report
    assert "> Please look at the repository." in report  # the first user message
    assert "## Recent turns" in report
    assert "now fix the failing test" in report
    assert "## Open tool calls" in report
    assert "`run_tests` (c-open)" in report
    assert "## Degradations" in report
    assert "(none: restored exactly)" in report
    assert "Stop: failed: budget check" in report
    assert "hand off" in report


def test_report_lists_degradations_and_killed_stop(tmp_path: Path) -> None:
    """Degradations and a killed stop point are spelled out in the report."""
    b = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED)
    b.add(Message(role=Role.USER, content="more"))
    report = handoff_report(read_replay(b.write()))
    assert "after_checkpoint" in report
    assert "killed" in report
    assert "not verified" in report


def test_report_without_user_message_or_stop(tmp_path: Path) -> None:
    """A conversation without a user message and without stop facts still renders, saying so."""
    path = RolloutBuilder(tmp_path).add(Message(role=Role.SYSTEM, content="sys")).write()
    report = handoff_report(read_replay(path))
    assert "(no user message in the replayed conversation)" in report
    assert "unknown" in report
    assert "no_checkpoint" in report


def test_report_shows_error_detail_and_truncates_long_goals(tmp_path: Path) -> None:
    """The stop's error detail is shown and a very long goal is cut with a note."""
    ms = [Message(role=Role.USER, content="g" * 5000)]
    b = RolloutBuilder(tmp_path).extend(ms).checkpoint()
    b.terminal(StopKind.ERROR, "boom", ErrorDetail(type="RuntimeError", message="provider 500"))
    report = handoff_report(read_replay(b.write()))
    assert "Error: RuntimeError: provider 500" in report
    assert "more characters]" in report
    assert report.count("g") < 3000
