"""rollout-ledger, the read side: replay, stop facts, resume eligibility, listing, the lossy view.

``replay`` imports ``ledger``; never the reverse. The reducer (``fold``, ``apply``,
``ReplayState``) is public here, the read side's, though its code lives in ``ledger.reducer``
because the writer's checkpoint folds the file through it too (SPEC rule 1).
"""

from ledger.reducer import ReplayState, apply, fold
from replay._files import NotARegularFileError
from replay.aio import alist_sessions, aread_replay, aread_stop_facts
from replay.eligibility import Eligibility, Tier, resume_eligibility
from replay.handoff import handoff_report
from replay.lookup import (
    AmbiguousSessionError,
    DuplicateSessionError,
    SessionLookupError,
    SessionNotFoundError,
    find_session,
)
from replay.replay import (
    Replay,
    ReplayTooLarge,
    TokenCounter,
    estimate_tokens,
    read_replay,
)
from replay.sessions import SessionEntry, SessionFlag, list_sessions, read_session_entry
from replay.stop import StopFacts, read_stop_facts
from replay.tree import SessionNode, SessionTree, session_tree
from replay.verdict import Verdict, Verification, verify_replay
from replay.view import (
    INTERRUPTED_OUTPUT,
    MemoryView,
    ToolPairing,
    TranscriptEntry,
    read_memory,
    repair_tool_pairs,
    transcript,
)

__all__ = [
    "INTERRUPTED_OUTPUT",
    "AmbiguousSessionError",
    "DuplicateSessionError",
    "Eligibility",
    "MemoryView",
    "NotARegularFileError",
    "Replay",
    "ReplayState",
    "ReplayTooLarge",
    "SessionEntry",
    "SessionFlag",
    "SessionLookupError",
    "SessionNode",
    "SessionNotFoundError",
    "SessionTree",
    "StopFacts",
    "Tier",
    "TokenCounter",
    "ToolPairing",
    "TranscriptEntry",
    "Verdict",
    "Verification",
    "alist_sessions",
    "apply",
    "aread_replay",
    "aread_stop_facts",
    "estimate_tokens",
    "find_session",
    "fold",
    "handoff_report",
    "list_sessions",
    "read_memory",
    "read_replay",
    "read_session_entry",
    "read_stop_facts",
    "repair_tool_pairs",
    "resume_eligibility",
    "session_tree",
    "transcript",
    "verify_replay",
]
