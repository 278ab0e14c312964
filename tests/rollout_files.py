"""Rollout files for read-side tests, built record by record with the codec (no writer needed).

:class:`RolloutBuilder` keeps a model of the conversation as replay must rebuild it, so a
checkpoint's digest is computed the way a writer computes it: over the rebuilt sequence.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from ledger import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    ErrorDetail,
    Message,
    SessionMeta,
    StopKind,
    Terminal,
    ToolCall,
    checkpoint_digest,
    encode_line,
    message_records,
    rollout_filename,
)

START = datetime(2026, 12, 2, 9, 30, 0, tzinfo=UTC)


class RolloutBuilder:
    """Builds one rollout's lines; :meth:`write` puts them in a file named by the naming rule."""

    def __init__(
        self,
        directory: Path,
        *,
        session_id: str = "s-1",
        agent_name: str | None = None,
        started_at: datetime = START,
        parent_session_id: str | None = None,
        delegation_id: str | None = None,
        meta: bool = True,
        format_version: int = FORMAT_VERSION,
    ) -> None:
        self.directory = directory
        self.session_id = session_id
        self.agent_name = agent_name
        self.started_at = started_at
        self.lines: list[bytes] = []
        self.model: list[Message] = []
        self.format_version = format_version
        # What the version-2 digest sees: the last compaction's messages, then those appended.
        self.compaction: tuple[Message, ...] | None = None
        self.appended: list[Message] = []
        self.seq = 1
        if meta:
            self.lines.append(
                encode_line(
                    SessionMeta(
                        seq=self._next(),
                        ts=started_at,
                        format_version=format_version,
                        session_id=session_id,
                        started_at=started_at,
                        agent_name=agent_name,
                        parent_session_id=parent_session_id,
                        delegation_id=delegation_id,
                    )
                )
            )

    @property
    def path(self) -> Path:
        return self.directory / rollout_filename(self.started_at, self.session_id, self.agent_name)

    def _next(self) -> int:
        seq = self.seq
        self.seq += 1
        return seq

    def _ts(self) -> datetime:
        return self.started_at + timedelta(milliseconds=self.seq)

    def add(self, *messages: Message) -> RolloutBuilder:
        """Append messages (reasoning as its own records, as a writer does)."""
        for m in messages:
            for rec in message_records(m, first_seq=self.seq, ts=self._ts()):
                self.lines.append(encode_line(rec))
                self.seq = rec.seq + 1
            self.model.append(m)
            self.appended.append(m)
        return self

    def extend(self, messages: Iterable[Message]) -> RolloutBuilder:
        return self.add(*messages)

    def compacted(self, messages: Iterable[Message], summary: str | None = None) -> RolloutBuilder:
        ms = tuple(messages)
        rec = Compacted(seq=self._next(), ts=self._ts(), messages=ms, summary=summary)
        self.lines.append(encode_line(rec))
        self.model = list(ms)
        self.compaction, self.appended = ms, []
        return self

    def checkpoint(
        self, digest: str | None = None, count: int | None = None, *, type_last: bool = False
    ) -> RolloutBuilder:
        """A checkpoint over the model (or the given digest/count, to forge a bad one); with
        ``type_last``, written as another encoder might, its ``"type"`` key last."""
        rec = AgentCheckpoint(
            seq=self._next(),
            ts=self._ts(),
            digest=self.digest() if digest is None else digest,
            message_count=len(self.model) if count is None else count,
        )
        line = encode_line(rec)
        if type_last:
            fields = msgspec.json.decode(line)
            fields["type"] = fields.pop("type")
            line = msgspec.json.encode(fields) + b"\n"
        self.lines.append(line)
        return self

    def digest(self) -> str:
        """The digest a writer would checkpoint for the conversation built so far."""
        return checkpoint_digest(
            self.appended, compacted=self.compaction, format_version=self.format_version
        )

    def terminal(
        self,
        kind: StopKind | str | None,
        reason: str = "",
        error: ErrorDetail | None = None,
    ) -> RolloutBuilder:
        rec = Terminal(
            seq=self._next(),
            ts=self._ts(),
            stop_kind=None if kind is None else str(kind),
            reason=reason,
            error=error,
        )
        self.lines.append(encode_line(rec))
        return self

    def stop(self, kind: StopKind | str | None, reason: str = "") -> RolloutBuilder:
        """The terminal path: a checkpoint, then the terminal record."""
        return self.checkpoint().terminal(kind, reason)

    def raw(self, line: bytes) -> RolloutBuilder:
        """Append bytes as they are (damage, foreign lines); no sequence number is used."""
        self.lines.append(line)
        return self

    def data(self) -> bytes:
        return b"".join(self.lines)

    def write(self, path: Path | None = None) -> Path:
        target = path or self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(self.data())
        return target


def conversation(n_turns: int = 2, *, tag: str = "") -> list[Message]:
    """A small realistic conversation: system, user, then assistant/tool turns."""
    ms = [
        Message(role="system", content=f"You are a careful agent.{tag}"),
        Message(role="user", content=f"Please look at the repository.{tag}"),
    ]
    for i in range(n_turns):
        cid = f"call_{tag}{i}"
        ms.append(
            Message(
                role="assistant",
                content=None,
                tool_calls=(ToolCall(id=cid, name="shell", arguments='{"cmd": "ls"}'),),
            )
        )
        ms.append(Message(role="tool", tool_call_id=cid, content=f"file{i}.txt\n"))
    ms.append(Message(role="assistant", content=f"Done.{tag}"))
    return ms
