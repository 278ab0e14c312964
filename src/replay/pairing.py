"""Which tool output answers which tool call: pairing per turn (ADR 0041).

Servers that number tool calls ``call_0``, ``call_1``, ... afresh in every response reuse ids
across a conversation, so a call id names a call only within its turn. A **turn** starts at
every assistant message (and at any other non-tool message that carries tool calls) and holds
the messages after it up to the next such start. A tool message answers a call of its own turn:
the call whose id equals its ``tool_call_id`` among the calls of the message that started the
turn. A tool message before the first turn, without an id, or whose id the turn's calls do not
have, is an orphan. A call is identified by ``(turn, id)``: the same id twice in one message is
one call.

Every pairing of the read side goes through :func:`pair_tool_calls`: the repair for providers
(``replay.repair_tool_pairs``, hence the lossy view), the transcript of ``rollout show`` and
the open calls of the hand-off report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from ledger.messages import Message, Role, ToolCall

__all__ = ["CallKey", "CallPairing", "pair_tool_calls", "starts_turn"]

CallKey = tuple[int, str]
"""A call: the index of the message that started its turn, and its id."""


def starts_turn(m: Message) -> bool:
    """Whether ``m`` starts a turn: an assistant message, or a non-tool message with calls."""
    return m.role == Role.ASSISTANT or (m.role != Role.TOOL and bool(m.tool_calls))


@attrs.frozen
class CallPairing:
    """The calls of a message sequence and the tool messages that answer each.

    ``calls`` lists every call in order, once per ``(turn, id)``, with the first
    :class:`~ledger.ToolCall` of that id in its message. ``outputs[key]`` holds the indexes of
    the tool messages answering that call, in order (the last one counts, SPEC rule 12).
    ``answers[i]`` is the call the tool message at index ``i`` answers (absent for other
    messages and for orphans); ``orphans`` holds the indexes of tool messages that answer no
    call of their turn.
    """

    calls: tuple[tuple[CallKey, ToolCall], ...]
    outputs: Mapping[CallKey, tuple[int, ...]]
    answers: Mapping[int, CallKey]
    orphans: frozenset[int]

    def open_calls(self) -> tuple[tuple[CallKey, ToolCall], ...]:
        """The calls no tool message answers, in order."""
        return tuple((key, call) for key, call in self.calls if key not in self.outputs)


def pair_tool_calls(messages: Sequence[Message]) -> CallPairing:
    """Pair every tool message with the call of its turn that it answers."""
    turn: int | None = None
    turn_ids: frozenset[str] = frozenset()
    calls: list[tuple[CallKey, ToolCall]] = []
    outputs: dict[CallKey, list[int]] = {}
    answers: dict[int, CallKey] = {}
    orphans: set[int] = set()
    for i, m in enumerate(messages):
        if m.role == Role.TOOL:
            cid = m.tool_call_id
            if turn is None or cid is None or cid not in turn_ids:
                orphans.add(i)
                continue
            key = (turn, cid)
            outputs.setdefault(key, []).append(i)
            answers[i] = key
        elif starts_turn(m):
            turn = i
            seen: set[str] = set()
            for call in m.tool_calls:
                if call.id not in seen:
                    seen.add(call.id)
                    calls.append(((i, call.id), call))
            turn_ids = frozenset(seen)
    return CallPairing(
        calls=tuple(calls),
        outputs=MappingProxyType({k: tuple(v) for k, v in outputs.items()}),
        answers=MappingProxyType(answers),
        orphans=frozenset(orphans),
    )
