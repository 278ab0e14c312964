"""``ConversationMemory``: a framework's working conversation, private and thread-safe.

The list is never handed out (SPEC rule 3, ADR 0026): reads return copies, writes go through
methods under one lock. ``max_size`` bounds the list on append; what is dropped first is the
oldest message that is neither a system/developer message nor anchored (ADR 0024).
``replace`` loads a conversation wholesale and never truncates. When bound to a
:class:`~ledger.writer.RolloutWriter`, every appended message is also appended to the rollout,
in the same order as in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from ledger.messages import ContentPart, Message, Reasoning, Role, ToolCall
from ledger.validation import InvalidFieldError

__all__ = ["ConversationMemory", "MemoryWireError", "MessageSink"]


class MessageSink(Protocol):
    """What a memory can be bound to: a :class:`~ledger.writer.RolloutWriter`, or any writer
    with the same ``append`` and ``compacted``."""

    def append(self, message: Message) -> None: ...

    def compacted(self, messages: Iterable[Message], summary: str | None = None) -> None: ...


_PROTECTED_ROLES = frozenset((Role.SYSTEM, Role.DEVELOPER))


class MemoryWireError(ValueError):
    """JSON handed to :meth:`ConversationMemory.from_json` is not its wire form."""


class _Wire(msgspec.Struct, forbid_unknown_fields=True):
    # Field order is the wire order: {"messages":[...],"max_size":n}.
    messages: tuple[Message, ...]
    max_size: int | None = None


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Wire)


def _check_max_size(max_size: int | None) -> int | None:
    if max_size is None:
        return None
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ValueError(f"max_size must be a positive int or None, not {max_size!r}")
    return max_size


def _protected(message: Message) -> bool:
    return message.is_anchored or message.role in _PROTECTED_ROLES


class ConversationMemory:
    """A bounded, thread-safe conversation whose list is never shared.

    ``max_size=None`` means unbounded. ``writer`` (optional) receives every appended message.
    """

    __slots__ = ("_dropped", "_lock", "_max_size", "_messages", "_writer")

    def __init__(self, max_size: int | None = None, *, writer: MessageSink | None = None) -> None:
        self._max_size = _check_max_size(max_size)
        self._messages: list[Message] = []
        self._dropped = 0
        # Re-entrant so that a subclass hook may read the memory while it is being changed.
        self._lock = threading.RLock()
        self._writer = writer

    # --- reading: copies only --------------------------------------------------------------

    @property
    def max_size(self) -> int | None:
        """The bound applied on append, or ``None``."""
        return self._max_size

    @property
    def dropped(self) -> int:
        """How many messages ``max_size`` truncation has dropped so far."""
        with self._lock:
            return self._dropped

    @property
    def writer(self) -> MessageSink | None:
        """The writer appended messages also go to, or ``None``."""
        return self._writer

    def snapshot(self) -> tuple[Message, ...]:
        """The conversation as a tuple (a copy: later appends do not change it)."""
        with self._lock:
            return tuple(self._messages)

    def last_message(self) -> Message | None:
        """The newest message, or ``None`` when empty."""
        with self._lock:
            return self._messages[-1] if self._messages else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)

    def __repr__(self) -> str:
        with self._lock:
            n = len(self._messages)
        return f"<ConversationMemory {n} message(s) max_size={self._max_size}>"

    # --- writing ----------------------------------------------------------------------------

    def bind(self, writer: MessageSink | None) -> None:
        """Send every message appended from now on to ``writer`` too (``None`` unbinds)."""
        with self._lock:
            self._writer = writer

    def append(self, message: Message) -> None:
        """Append one message, truncating to ``max_size`` (never the message just appended).

        With a bound writer the message goes to the rollout as well, in memory order. If the
        writer refuses it (closed, failed), memory is left unchanged and the error propagates.
        """
        if type(message) is not Message:
            raise TypeError(f"append() takes a ledger.Message, not {type(message).__name__}")
        with self._lock:
            if self._writer is not None:
                self._writer.append(message)
            self._messages.append(message)
            self._truncate()

    def extend(self, messages: Iterable[Message]) -> None:
        """Append several messages, in order, as one step (no other append interleaves)."""
        with self._lock:
            for m in messages:
                self.append(m)

    def add_system(self, text: str, **fields: Any) -> Message:
        """Append a system message with ``text``; returns it."""
        return self._add(Message(role=Role.SYSTEM, content=text, **fields))

    def add_user(self, content: str | Sequence[ContentPart], **fields: Any) -> Message:
        """Append a user message; returns it."""
        return self._add(Message(role=Role.USER, content=_content(content), **fields))

    def add_assistant(
        self,
        content: str | Sequence[ContentPart] | None = None,
        *,
        reasoning: Sequence[Reasoning] = (),
        tool_calls: Sequence[ToolCall] = (),
        **fields: Any,
    ) -> Message:
        """Append an assistant message (with its reasoning blocks and tool calls); returns it."""
        return self._add(
            Message(
                role=Role.ASSISTANT,
                content=_content(content),
                reasoning=tuple(reasoning),
                tool_calls=tuple(tool_calls),
                **fields,
            )
        )

    def add_tool_result(
        self,
        tool_call_id: str,
        content: str | Sequence[ContentPart] | None,
        *,
        is_error: bool = False,
        **fields: Any,
    ) -> Message:
        """Append the result of the tool call ``tool_call_id``; returns it."""
        return self._add(
            Message(
                role=Role.TOOL,
                content=_content(content),
                tool_call_id=tool_call_id,
                is_error=is_error,
                **fields,
            )
        )

    def _add(self, message: Message) -> Message:
        self.append(message)
        return message

    def replace(self, messages: Iterable[Message]) -> None:
        """Load ``messages`` wholesale, without ``max_size`` truncation and without writing them.

        For loading a replayed conversation. To record a compaction in the rollout, use
        :meth:`compact`.
        """
        new = list(messages)
        for m in new:
            if type(m) is not Message:
                raise TypeError(f"replace() takes ledger.Message values, not {type(m).__name__}")
        with self._lock:
            self._messages = new

    def compact(self, messages: Iterable[Message], summary: str | None = None) -> None:
        """Replace the conversation by ``messages`` and record the compaction in the rollout."""
        new = tuple(messages)
        with self._lock:
            if self._writer is not None:
                self._writer.compacted(new, summary)
            self.replace(new)

    def clear(self) -> None:
        """Forget every message (not recorded in a bound rollout)."""
        with self._lock:
            self._messages = []

    def _truncate(self) -> None:
        # Caller holds the lock. Drop the oldest unprotected message until within bounds; the
        # message just appended (the last) is never dropped.
        limit = self._max_size
        if limit is None:
            return
        messages = self._messages
        while len(messages) > limit:
            for i in range(len(messages) - 1):
                if not _protected(messages[i]):
                    del messages[i]
                    self._dropped += 1
                    break
            else:
                # Everything older is protected: keeping them beats honouring the bound.
                return

    # --- the wire form ------------------------------------------------------------------------

    def to_json(self) -> str:
        """The wire form ``{"messages":[...],"max_size":n}`` (``null`` when unbounded)."""
        with self._lock:
            wire = _Wire(messages=tuple(self._messages), max_size=self._max_size)
        return _encoder.encode(wire).decode()

    @classmethod
    def from_json(
        cls, data: str | bytes, *, writer: MessageSink | None = None
    ) -> ConversationMemory:
        """Rebuild a memory from :meth:`to_json` output (loaded without truncation)."""
        try:
            wire = _decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise MemoryWireError(
                f'not a ConversationMemory wire form {{"messages":[...],"max_size":n}}: {exc}'
            ) from None
        try:
            memory = cls(wire.max_size, writer=writer)
        except ValueError as exc:
            raise MemoryWireError(str(exc)) from None
        memory.replace(wire.messages)
        return memory


def _content(
    content: str | Sequence[ContentPart] | None,
) -> str | tuple[ContentPart, ...] | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, bytes | bytearray | Mapping) or not isinstance(content, Iterable):
        # Iterating these would hand over ints or keys, and the error would name neither.
        raise InvalidFieldError(
            "Message.content",
            content,
            "a str, a sequence of content parts (TextPart, MediaPart, OpaquePart) or None",
        )
    return tuple(content)
