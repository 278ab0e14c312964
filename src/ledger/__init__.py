"""rollout-ledger, the write side: the record algebra, the codec, names, context and the writer.

``ledger`` never imports ``replay`` (SPEC rule 5): what both sides need lives here.
"""

from ledger.codec import (
    RecordDecodeError,
    decode_record,
    encode_line,
    encode_record,
    join_message,
    message_records,
    split_message,
)
from ledger.context import (
    current_delegation_id,
    current_rollout_session_id,
    with_delegation_id,
    with_rollout_session_id,
)
from ledger.damage import Degradation, DegradationKind
from ledger.digest import checkpoint_digest
from ledger.memory import ConversationMemory, MemoryWireError, MessageSink
from ledger.messages import (
    ContentPart,
    MediaPart,
    Message,
    OpaquePart,
    Origin,
    Reasoning,
    ReasoningKind,
    Role,
    TextPart,
    ToolCall,
    raw_json,
)
from ledger.naming import (
    RolloutName,
    RolloutNameError,
    parse_rollout_filename,
    rollout_filename,
)
from ledger.records import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    ErrorDetail,
    MessageRecord,
    ReasoningRecord,
    Record,
    SessionMeta,
    StopKind,
    Terminal,
    UnknownRecord,
)
from ledger.reducer import ReplayState, apply, fold
from ledger.schema import json_schema
from ledger.writer import (
    Durability,
    RolloutExistsError,
    RolloutWriter,
    TailRepair,
    WriterBusyError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
)

__all__ = [
    "FORMAT_VERSION",
    "AgentCheckpoint",
    "Compacted",
    "ContentPart",
    "ConversationMemory",
    "Degradation",
    "DegradationKind",
    "Durability",
    "ErrorDetail",
    "RolloutNameError",
    "MediaPart",
    "MemoryWireError",
    "Message",
    "MessageRecord",
    "MessageSink",
    "OpaquePart",
    "Origin",
    "Reasoning",
    "ReasoningKind",
    "ReasoningRecord",
    "Record",
    "RecordDecodeError",
    "ReplayState",
    "Role",
    "RolloutExistsError",
    "RolloutName",
    "RolloutWriter",
    "SessionMeta",
    "StopKind",
    "TailRepair",
    "Terminal",
    "TextPart",
    "ToolCall",
    "UnknownRecord",
    "WriterBusyError",
    "WriterClosedError",
    "WriterError",
    "WriterFailedError",
    "apply",
    "checkpoint_digest",
    "current_delegation_id",
    "current_rollout_session_id",
    "decode_record",
    "encode_line",
    "encode_record",
    "fold",
    "join_message",
    "json_schema",
    "message_records",
    "parse_rollout_filename",
    "raw_json",
    "rollout_filename",
    "split_message",
    "with_delegation_id",
    "with_rollout_session_id",
]
