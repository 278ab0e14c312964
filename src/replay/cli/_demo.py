"""The session `rollout demo` writes: a coding agent that delegates, compacts and pauses.

The conversation is fixed; only the session ids and times change from run to run, so what the
demo prints can be checked by a test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ledger.context import with_delegation_id, with_rollout_session_id
from ledger.messages import Message, Origin, Reasoning, Role, ToolCall
from ledger.records import StopKind
from ledger.writer import RolloutWriter
from replay import (
    ReplayTooLarge,
    handoff_report,
    list_sessions,
    read_replay,
    resume_eligibility,
)
from replay.cli._render import sessions_table, short_id

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["DemoSessions", "run_demo", "write_demo"]

_ORIGIN = Origin(provider="anthropic", api="messages", model="claude-sonnet-4-5")
_SYSTEM = (
    "You are a careful coding agent working in the repository `weather-app`. "
    "Run the tests before and after every change. Ask before pushing."
)


@attrs.frozen
class DemoSessions:
    """What the demo wrote: the parent and the delegated child rollout."""

    parent: Path
    parent_id: str
    child: Path
    child_id: str
    delegation_id: str
    messages_written: int


def _thinking(text: str, signature: str) -> Reasoning:
    return Reasoning(text=text, signature=signature, origin=_ORIGIN)


def _first_turns() -> Iterator[Message]:
    yield Message(role=Role.SYSTEM, content=_SYSTEM)
    yield Message(
        role=Role.USER,
        content="test_forecast.py fails since yesterday's merge. Can you find out why and fix it?",
    )
    yield Message(
        role=Role.ASSISTANT,
        origin=_ORIGIN,
        reasoning=(
            _thinking(
                "Start by reproducing: run only the failing test to see the assertion.",
                "EqQBCkYIBxgCKkD0demo0signature0one",
            ),
        ),
        content="Let me reproduce the failure first.",
        tool_calls=(
            ToolCall(
                id="toolu_01",
                name="shell",
                arguments='{"cmd": "pytest -q tests/test_forecast.py"}',
            ),
        ),
    )
    yield Message(
        role=Role.TOOL,
        tool_call_id="toolu_01",
        content=(
            "F.\nFAILED tests/test_forecast.py::test_daily_high - assert 30.2 == 86.4\n"
            "1 failed, 1 passed in 0.12s"
        ),
    )


def _delegating_turn(call_id: str) -> Message:
    return Message(
        role=Role.ASSISTANT,
        origin=_ORIGIN,
        reasoning=(
            _thinking(
                "30.2 vs 86.4 looks like Celsius vs Fahrenheit. The merge touched the API "
                "client; a researcher can check which unit the upstream API now returns.",
                "EqQBCkYIBxgCKkD0demo0signature0two",
            ),
        ),
        tool_calls=(
            ToolCall(
                id=call_id,
                name="delegate",
                arguments='{"agent": "researcher", "task": "Which unit does the '
                'upstream forecast API return since v2?"}',
            ),
        ),
    )


def _child_turns() -> Iterator[Message]:
    yield Message(role=Role.SYSTEM, content="You answer questions about third-party APIs.")
    yield Message(
        role=Role.USER, content="Which unit does the upstream forecast API return since v2?"
    )
    yield Message(
        role=Role.ASSISTANT,
        origin=_ORIGIN,
        reasoning=(_thinking("Check the changelog of the v2 API.", "EqQBCkYIBxgCKkD0demo0child"),),
        tool_calls=(
            ToolCall(id="toolu_c1", name="fetch", arguments='{"url": "docs/api/CHANGELOG.md"}'),
        ),
    )
    yield Message(
        role=Role.TOOL,
        tool_call_id="toolu_c1",
        content="## v2.0\n- temperatures are now returned in Celsius unless units=imperial",
    )
    yield Message(
        role=Role.ASSISTANT,
        content="Since v2 the API returns Celsius unless the request passes units=imperial.",
    )


def _after_child(call_id: str, answer: str) -> Iterator[Message]:
    yield Message(role=Role.TOOL, tool_call_id=call_id, content=answer)
    yield Message(
        role=Role.ASSISTANT,
        origin=_ORIGIN,
        reasoning=(
            _thinking(
                "Pass units=imperial in the client, then rerun the test.",
                "EqQBCkYIBxgCKkD0demo0signature0three",
            ),
        ),
        tool_calls=(
            ToolCall(
                id="toolu_03",
                name="edit_file",
                arguments='{"path": "weather/client.py", "find": "params={", '
                '"replace": "params={\\"units\\": \\"imperial\\", "}',
            ),
            ToolCall(
                id="toolu_04", name="shell", arguments='{"cmd": "pytest -q tests/test_forecast.py"}'
            ),
        ),
    )
    yield Message(role=Role.TOOL, tool_call_id="toolu_03", content="1 edit applied")
    yield Message(role=Role.TOOL, tool_call_id="toolu_04", content="..\n2 passed in 0.10s")
    yield Message(
        role=Role.ASSISTANT,
        content="Fixed: the client now asks for units=imperial; both forecast tests pass.",
    )


def _compacted(conversation: list[Message]) -> tuple[str, list[Message]]:
    summary = (
        "The forecast test failed because API v2 returns Celsius; the client now passes "
        "units=imperial and the tests pass."
    )
    kept = [
        conversation[0],
        Message(role=Role.USER, content=f"Summary of the work so far: {summary}"),
        conversation[-1],
    ]
    return summary, kept


def _last_turns() -> Iterator[Message]:
    yield Message(role=Role.USER, content="Great. Push it to a branch and open a pull request.")
    yield Message(
        role=Role.ASSISTANT,
        origin=_ORIGIN,
        reasoning=(
            _thinking(
                "Pushing needs the user's go-ahead on the branch name; pause and ask.",
                "EqQBCkYIBxgCKkD0demo0signature0four",
            ),
        ),
        content="I will push to `fix/forecast-units`. Shall I go ahead?",
    )


def write_demo(root: Path) -> DemoSessions:
    """Write the demo's parent and child rollouts under ``root`` and stop the parent paused."""
    written = 0
    with RolloutWriter.create(
        root,
        agent_name="coder",
        meta={"model": _ORIGIN.model or "", "provider": "anthropic", "project": "weather-app"},
    ) as parent:
        conversation = list(_first_turns())
        call_id = "toolu_02"
        conversation.append(_delegating_turn(call_id))
        for m in conversation:
            parent.append(m)

        # The delegated child runs with the coordinates in context; its writer records them.
        with (
            with_delegation_id(call_id),
            with_rollout_session_id(parent.session_id),
            RolloutWriter.create(root, agent_name="researcher") as child,
        ):
            child_turns = list(_child_turns())
            for m in child_turns:
                child.append(m)
            child.stop(StopKind.COMPLETED, reason="answered the question")
        written += len(child_turns)

        rest = list(_after_child(call_id, child_turns[-1].text()))
        for m in rest:
            parent.append(m)
        conversation += rest

        summary, kept = _compacted(conversation)
        parent.compacted(kept, summary=summary)
        for m in _last_turns():
            parent.append(m)
            conversation.append(m)
        written += len(conversation)
        parent.stop(StopKind.PAUSED, reason="waiting for the user's go-ahead to push")
        return DemoSessions(
            parent=parent.path,
            parent_id=parent.session_id,
            child=child.path,
            child_id=child.session_id,
            delegation_id=call_id,
            messages_written=written,
        )


_BUDGET = 120


def _resume(path: Path) -> int:
    """Continue the paused session: the user says yes, the agent pushes, and pauses again."""
    with RolloutWriter.open(path) as writer:
        writer.append(Message(role=Role.USER, content="Yes, go ahead."))
        writer.append(
            Message(
                role=Role.ASSISTANT,
                origin=_ORIGIN,
                tool_calls=(
                    ToolCall(
                        id="toolu_05",
                        name="shell",
                        arguments='{"cmd": "git push -u origin fix/forecast-units"}',
                    ),
                ),
            )
        )
        writer.append(Message(role=Role.TOOL, tool_call_id="toolu_05", content="branch pushed"))
        writer.append(
            Message(role=Role.ASSISTANT, content="Pushed. Shall I open the pull request?")
        )
        writer.stop(StopKind.PAUSED, reason="waiting for the user before opening the PR")
        return 4


def run_demo(console: Console, root: Path, command: str = "rollout") -> DemoSessions:
    """Write the demo sessions under ``root``, then list, verify, replay and resume them.

    ``command`` is how the closing hints spell the command (the way it was started).
    """
    from rich.text import Text

    def step(n: int, title: str) -> None:
        console.print()
        console.print(Text(f"{n}. {title}", style="bold"))

    def say(text: str, style: str = "") -> None:
        console.print(Text(f"   {text}", style=style))

    step(1, f"Write a session under {root}")
    demo = write_demo(root)
    say(f"parent {demo.parent.name}")
    say(
        "system prompt, user turns, assistant turns with signed reasoning blocks, tool calls "
        "and their outputs"
    )
    say(f"delegated call {demo.delegation_id} ran a child in its own file, {demo.child.name},")
    say(
        f"with its coordinates in session_meta (parent {short_id(demo.parent_id)}, "
        f"delegation {demo.delegation_id}); the child stopped completed"
    )
    say("the conversation was compacted, then the parent paused: checkpoint + terminal record")

    step(2, "List the sessions (from each file's first line and tail only)")
    ours = {demo.parent.resolve(), demo.child.resolve()}
    entries = [e for e in list_sessions(root) if e.path.resolve() in ours]
    entries.sort(key=lambda e: e.path != demo.parent)
    console.print(sessions_table(entries))

    step(3, "Verify: rebuild each file and check the checkpoint digest")
    for path in (demo.parent, demo.child):
        rep = read_replay(path, whole_file=True)
        verdict = "verified" if rep.verified else "NOT verified"
        digest = rep.checkpoint.digest if rep.checkpoint else "no checkpoint"
        say(
            f"{short_id(rep.session_id)} {verdict}: {rep.total_messages} messages, {digest}",
            "green" if rep.verified else "bold red",
        )

    step(4, "Replay the paused session, as a framework would to resume it")
    rep = read_replay(demo.parent)
    decision = resume_eligibility(rep.stop, meta=rep.meta)
    say(f"resumable: {decision.replayable} ({decision.reason})")
    say(
        f"{len(rep.messages)} messages after the compaction, about {rep.estimated_tokens} "
        "tokens; the last assistant message keeps its reasoning block and signature"
    )
    for d in rep.degraded:
        say(f"degraded: {d}", "yellow")
    try:
        read_replay(demo.parent, token_budget=_BUDGET)
        say(f"fits a budget of {_BUDGET} tokens")
    except ReplayTooLarge as exc:
        report = handoff_report(exc.replay)
        say(
            f"over a budget of {_BUDGET} tokens: ReplayTooLarge carries the replay, and the "
            f"hand-off report starts with {report.splitlines()[0]!r}"
        )

    step(5, "Resume: reopen the file, continue, and pause again")
    added = _resume(demo.parent)
    again = read_replay(demo.parent)
    say(
        f"appended {added} messages; {len(again.messages)} messages now, the last checkpoint "
        f"wins and is {'verified' if again.verified else 'NOT verified'}",
        "green" if again.verified else "bold red",
    )

    step(6, "Try the command yourself")
    prefix = f"{command} --root {root}"
    for cmd in (
        f"{prefix} ls",
        f"{prefix} show {short_id(demo.parent_id)}",
        f"{prefix} tree",
        f"{prefix} verify --all",
        f"{prefix} replay {short_id(demo.parent_id)} --json",
    ):
        say(cmd, "cyan")
    return demo
