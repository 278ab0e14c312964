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
    checkpoint_digest,
)
from ledger.reader import rebuild


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

    # Second run: continue the same file, as a resumed session would.
    resumed = rebuild(path)
    with RolloutWriter.open(path) as writer:
        memory = ConversationMemory(max_size=50)
        memory.replace(resumed.messages)
        memory.bind(writer)
        memory.add_assistant("README.md has 42 lines.")
        writer.stop(StopKind.COMPLETED, reason="answered")
    conversation = memory.snapshot()

    # Read it back the way replay does: rebuild from the file, verify the last checkpoint.
    again = rebuild(path)
    exact = again.messages == conversation
    verified = (
        again.checkpoint is not None
        and checkpoint_digest(again.at_checkpoint) == again.checkpoint.digest
    )
    print(f"rebuilt from the file: {len(again.messages)} messages, exact={exact}")
    print(f"last checkpoint verified against the rebuilt messages: {verified}")
    kind = again.terminal.stop_kind if again.terminal else "unknown"
    print(f"stop kind: {kind}; degradations: {len(again.degraded)}")
    if not (exact and verified and again.degraded == ()):
        raise SystemExit("the rollout did not come back exactly")
    if Message(role="user", content="How many lines does README.md have?") not in again.messages:
        raise SystemExit("the user's question is missing")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".rollout-demo"))
