"""A small end-to-end example: record a session, rebuild it from the file, check its digest.

Usage: python examples/quickstart.py [DIRECTORY]
"""

from __future__ import annotations

import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from ledger import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Message,
    Reasoning,
    SessionMeta,
    StopKind,
    Terminal,
    ToolCall,
    checkpoint_digest,
    encode_line,
    message_records,
    rollout_filename,
)
from ledger.reader import rebuild


def main(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    session_id = str(uuid.uuid4())
    path = directory / rollout_filename(now, session_id, "quickstart")
    conversation = [
        Message(role="system", content="You are a careful coding agent."),
        Message(role="user", content="How many lines does README.md have?"),
        Message(
            role="assistant",
            reasoning=(Reasoning(text="I should count the lines.", signature="sig-1"),),
            tool_calls=(
                ToolCall(id="call_1", name="shell", arguments='{"cmd": "wc -l README.md"}'),
            ),
        ),
        Message(role="tool", tool_call_id="call_1", content="42 README.md"),
        Message(role="assistant", content="README.md has 42 lines."),
    ]
    seq = 1
    lines = [
        encode_line(
            SessionMeta(
                seq=seq,
                ts=now,
                format_version=FORMAT_VERSION,
                session_id=session_id,
                started_at=now,
                agent_name="quickstart",
            )
        )
    ]
    for message in conversation:
        for record in message_records(message, first_seq=seq + 1, ts=now):
            lines.append(encode_line(record))
            seq = record.seq
    path.write_bytes(b"".join(lines))
    print(f"wrote {len(lines)} records for {len(conversation)} messages to {path}")

    state = rebuild(path)
    digest = checkpoint_digest(state.messages)
    with path.open("ab") as f:
        f.write(
            encode_line(
                AgentCheckpoint(
                    seq=seq + 1, ts=now, digest=digest, message_count=len(state.messages)
                )
            )
        )
        f.write(
            encode_line(
                Terminal(seq=seq + 2, ts=now, stop_kind=StopKind.PAUSED, reason="example pause")
            )
        )
    print(f"checkpoint over {len(state.messages)} rebuilt messages: {digest}")

    again = rebuild(path)
    exact = again.messages == tuple(conversation)
    verified = (
        again.checkpoint is not None
        and checkpoint_digest(again.at_checkpoint) == again.checkpoint.digest
    )
    print(f"rebuilt from the file: {len(again.messages)} messages, exact={exact}")
    print(f"checkpoint digest verified against the rebuilt messages: {verified}")
    kind = again.terminal.stop_kind if again.terminal else "unknown"
    print(f"stop kind: {kind}; degradations: {len(again.degraded)}")
    if not (exact and verified):
        raise SystemExit("the rollout did not come back exactly")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".rollout-demo"))
