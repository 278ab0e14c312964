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
    delegation_coordinates,
    with_delegation_id,
    with_rollout_session_id,
)
from ledger.damage import Degradation, DegradationKind, is_damage
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
from ledger.validation import MAX_RAW_DEPTH, InvalidFieldError
from ledger.writer import (
    Durability,
    ReadBackError,
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
    "MAX_RAW_DEPTH",
    "AgentCheckpoint",
    "Compacted",
    "ContentPart",
    "ConversationMemory",
    "Degradation",
    "DegradationKind",
    "Durability",
    "ErrorDetail",
    "InvalidFieldError",
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
    "ReadBackError",
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
    "delegation_coordinates",
    "decode_record",
    "encode_line",
    "encode_record",
    "fold",
    "is_damage",
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
