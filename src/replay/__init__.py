"""rollout-ledger, the read side: replay, stop facts, resume eligibility, listing, the lossy view.

``replay`` imports ``ledger``; never the reverse.
"""

from ledger.reducer import ReplayState, apply, fold

__all__ = ["ReplayState", "apply", "fold"]
