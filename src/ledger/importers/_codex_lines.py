"""One Codex CLI rollout to ledger operations, line by line: the session's facts, a first pass
over the lines for what later lines need (exit codes, reasoning summaries, whether usage comes
in records of its own), then each line, envelope or legacy layout, handed to the kind that
converts it: response items (:mod:`._codex_conversation`), the session, turn and compaction
lines (:mod:`._codex_context`), event messages and usage (:mod:`._codex_events`). Apart from
them because it is the entry point and the only module that knows the layouts of a line.
"""

from __future__ import annotations

from typing import Any

from ledger.importers._codex_events import EventLines
from ledger.importers._plan import Op
from ledger.importers._report import Disposition, Tally

__all__ = ["CodexSession", "convert_codex"]

D = Disposition
_ENVELOPES = (
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "token_usage_record",
    "world_state",
)


class CodexSession:
    """The facts of a Codex rollout besides its operations."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.version: str | None = None
        self.started: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.cwd: str | None = None
        self.parent: str | None = None
        self.meta: dict[str, Any] = {}
        self.tail = "idle"


def convert_codex(values: tuple[Any, ...], tally: Tally, s: CodexSession) -> list[Op]:
    """The operations of a whole Codex rollout (envelope or legacy lines)."""
    return _Run(values, tally, s).run()


class _Run(EventLines):
    def __init__(self, values: tuple[Any, ...], tally: Tally, s: CodexSession) -> None:
        super().__init__(tally, s)
        self.values = values

    def run(self) -> list[Op]:
        for o in self.values:
            if isinstance(o, dict):
                p = o.get("payload")
                if o.get("type") == "token_usage_record":
                    self.usage_records = True
                if (
                    isinstance(p, dict)
                    and p.get("type") == "exec_command_end"
                    and isinstance(p.get("call_id"), str)
                    and type(p.get("exit_code")) is int
                ):
                    self.exit_codes[p["call_id"]] = p["exit_code"]
                if o.get("type") == "response_item" or "payload" not in o:
                    self.summaries.update(_summary_texts(p if "payload" in o else o))
        # Bare items are the legacy layout; in a file of envelopes, a line without a payload
        # is damaged or unknown, never a response item that would enter the conversation.
        enveloped = any(isinstance(o, dict) and "payload" in o for o in self.values)
        for n, o in enumerate(self.values, 1):
            if o is None or not isinstance(o, dict):
                continue
            try:
                if "payload" in o and "type" in o:
                    self.line(n, o.get("type"), o.get("payload"), o)
                elif enveloped:
                    self.stray(n, o)
                else:
                    self.legacy(n, o)
            except Exception as exc:  # one line that cannot be converted never costs the others
                self.tally.mark(n, D.DAMAGED, f"could not be converted ({exc!r})")
        self.flush()
        self.fill_turn(None)
        return [op for op in self.ops if op is not None]

    # --- lines ------------------------------------------------------------------------------

    def line(self, n: int, t: Any, p: Any, o: dict[str, Any]) -> None:
        if t == "response_item" and isinstance(p, dict):
            self.item(n, p)
        elif t == "session_meta" and isinstance(p, dict):
            self.session_meta(n, p)
        elif t == "turn_context" and isinstance(p, dict):
            self.turn_context(n, p)
        elif t == "compacted" and isinstance(p, dict):
            self.compacted(n, p)
        elif t == "event_msg" and isinstance(p, dict):
            self.event(n, p)
        elif t == "token_usage_record" and isinstance(p, dict):
            self.note(n, self.usage(p, p.get("response_id")), "usage")
        elif t == "world_state":
            self.tally.mark(n, D.STATE, "world_state: environment state behind context items")
        else:
            self.tally.mark(n, D.UNKNOWN, f"line type {t!r} is unknown to this importer")

    def stray(self, n: int, o: dict[str, Any]) -> None:
        t = o.get("type")
        if t in _ENVELOPES:
            self.tally.mark(n, D.DAMAGED, f"{t} line without its payload")
        else:
            self.tally.mark(n, D.UNKNOWN, f"line type {t!r} without a payload is unknown")

    def legacy(self, n: int, o: dict[str, Any]) -> None:
        if "record_type" in o:
            self.tally.mark(n, D.STATE, f"record_type {o.get('record_type')!r}: client state")
        elif "type" not in o and "id" in o:
            self.session_meta(n, o)
        else:
            self.item(n, o)


def _summary_texts(item: Any) -> list[str]:
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return []
    parts = item.get("summary")
    found = [s.get("text") for s in parts if isinstance(s, dict)] if isinstance(parts, list) else []
    return [text for text in found if isinstance(text, str)]
