"""A small end-to-end example: record a session, pause it, resume it, and check it from the file.

Usage: python examples/quickstart.py [DIRECTORY]
"""

from __future__ import annotations

import sys
from pathlib import Path

from ledger import (
    ConversationMemory,
    Message,
    Reasoning,
    RolloutWriter,
    StopKind,
    ToolCall,
)
from replay import read_replay, resume_eligibility


def main(directory: Path) -> None:
    # First run: record a few turns through a memory bound to the writer, then pause.
    with RolloutWriter.create(
        directory, agent_name="quickstart", meta={"model": "example-model", "temperature": 0}
    ) as writer:
        memory = ConversationMemory(max_size=50, writer=writer)
        memory.add_system("You are a careful coding agent.")
        memory.add_user("How many lines does README.md have?")
        memory.add_assistant(
            reasoning=[Reasoning(text="I should count the lines.", signature="sig-1")],
            tool_calls=[
                ToolCall(id="call_1", name="shell", arguments='{"cmd": "wc -l README.md"}')
            ],
        )
        memory.add_tool_result("call_1", "42 README.md")
        writer.stop(StopKind.PAUSED, reason="waiting for the user")
    path = writer.path
    print(f"paused after {len(memory)} messages: {path}")

    # Second run: check that the session may be resumed as-is, then continue the same file.
    resumed = read_replay(path)
    decision = resume_eligibility(resumed.stop, meta=resumed.meta)
    if not (decision.replayable and resumed.exact):
        raise SystemExit(f"cannot resume exactly: {decision.reason}; {resumed.degraded}")
    with RolloutWriter.open(path) as writer:
        memory = ConversationMemory(max_size=50)
        memory.replace(resumed.messages)
        memory.bind(writer)
        memory.add_assistant("README.md has 42 lines.")
        writer.stop(StopKind.COMPLETED, reason="answered")
    conversation = memory.snapshot()

    # Read it back the way a framework does: rebuilt from the file, verified against the last
    # checkpoint's digest, every inexactness listed.
    again = read_replay(path)
    same = again.messages == conversation
    print(f"rebuilt from the file: {len(again.messages)} messages, same as written: {same}")
    print(f"last checkpoint verified against the rebuilt messages: {again.verified}")
    print(f"stop kind: {again.stop.stop_kind}; degradations: {len(again.degraded)}")
    if not (same and again.exact):
        raise SystemExit("the rollout did not come back exactly")
    if Message(role="user", content="How many lines does README.md have?") not in again.messages:
        raise SystemExit("the user's question is missing")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".rollout-demo"))
