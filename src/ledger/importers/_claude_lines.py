"""One Claude Code transcript (or one sidechain of it) to ledger operations, line by line.

Block lines of one API response (same ``message.id``) are merged back into one assistant
message in block order, through the Anthropic adapter so that signatures, block order and
unknown fields go back byte for byte. The path to the last message is followed through
``parentUuid`` (and ``logicalParentUuid`` across a compaction); lines off it are an abandoned
branch, except the results of parallel tool calls, which hang off their own call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from ledger.importers._claude_path import blocks, leaf, message, path
from ledger.importers._plan import EPOCH, Compaction, Op, checked_raw, merge_extra
from ledger.importers._report import Disposition, Tally
from ledger.messages import Message, Reasoning, Role
from ledger.providers import ProviderError, anthropic
from ledger.records import ErrorDetail, Event, EventKind, MetaUpdate, Turn, Usage

__all__ = ["ClaudeSession", "convert_lines"]

D = Disposition
KEY = "claude_code"
_STATE = {
    "file-history-snapshot": "file backups for /rewind (not the conversation)",
    "queue-operation": "typed-ahead prompt queue (a sent prompt is its own user line)",
    "atis-latch": "client state",
    "progress": "a UI trace (hooks, live tool output, agent progress)",
}
_META_TYPES = ("permission-mode", "agent-name", "tag", "pr-link")
_TITLES = ("custom-title", "ai-title")
_INTERRUPT = "[Request interrupted by user"
_ENVELOPE = ("uuid", "timestamp", "isMeta", "isVisibleInTranscriptOnly", "promptId", "requestId")
_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


class ClaudeSession:
    """What a conversion found besides the operations: the session's facts and its links."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.model: str | None = None
        self.cwd: str | None = None
        self.version: str | None = None
        self.started: str | None = None
        self.bedrock = False
        self.envelope: dict[str, Any] = {}
        self.links: dict[str, tuple[str, str | None]] = {}
        """agentId -> (delegating Task call id, subagent type), from results and progress."""
        self.tasks: dict[str, tuple[str, str | None]] = {}
        """Task call id -> (prompt, subagent type): to match 1.0.x inline sidechains."""
        self.tail = "idle"


def convert_lines(
    values: tuple[Any, ...], numbers: Iterable[int], tally: Tally, session: ClaudeSession
) -> list[Op]:
    """The operations of the lines ``numbers`` (1-based) of one conversation, in order."""
    lines = [(n, values[n - 1]) for n in numbers]
    last = leaf(lines)
    damaged = [i for i, fate in enumerate(tally.fates, 1) if fate and fate[0] is D.DAMAGED]
    kept = path(lines, last, damaged)
    calls: dict[str, str] = {}
    groups: dict[str, list[int]] = {}
    for n, o in lines:
        if o.get("type") == "assistant":
            mid = message(o).get("id")
            if isinstance(mid, str):
                groups.setdefault(mid, []).append(n)
    ops: list[Op] = []
    done: set[str] = set()
    boundary: dict[str, Any] | None = None
    boundary_line = 0
    last_env: tuple[Any, Any, Any] | None = None
    for n, o in lines:
        out: list[Op] = []  # this line's operations, kept only when it converts whole
        members = [n]
        try:
            t = o.get("type")
            _facts(o, session)
            env = (o.get("cwd"), o.get("gitBranch"), o.get("version"))
            if t in ("user", "assistant") and last_env is not None and env != last_env and any(env):
                out.append(_env_update(env, last_env))
            if t in ("user", "assistant"):
                last_env = env
            if t in ("user", "assistant") and n not in kept:
                tally.mark(n, D.BRANCH, "not on the path to the session's last message")
            elif t == "assistant":
                mid = message(o).get("id")
                if isinstance(mid, str) and mid in done:
                    ops.extend(out)
                    continue  # merged into the message of its first line
                members = groups.get(mid, [n]) if isinstance(mid, str) else [n]
                members = [m for m in members if m in kept] or [n]
                done.add(mid) if isinstance(mid, str) else None
                out.extend(_assistant(values, members, tally, session, calls))
            elif t == "user":
                if o.get("isCompactSummary"):
                    out.append(_compaction(o, boundary, n, tally))
                    boundary = None
                else:
                    out.extend(_user(o, n, tally, session, calls))
            elif t == "system":
                sub = o.get("subtype")
                if sub == "compact_boundary":
                    boundary, boundary_line = o, n
                    tally.mark(n, D.IMPORTED, "compacted")
                elif sub == "turn_duration":
                    extra = {KEY: {"durationMs": o.get("durationMs"), "uuid": o.get("uuid")}}
                    out.append(Turn(seq=0, ts=EPOCH, boundary="end", extra=_raw(extra)))
                    tally.mark(n, D.IMPORTED, "turn")
                elif sub == "api_error":
                    out.append(_api_error(o, str(o.get("error") or "api_error"), o.get("content")))
                    tally.mark(n, D.IMPORTED, "event")
                else:
                    tally.mark(n, D.STATE, f"system/{sub}: client bookkeeping, not model-visible")
            else:
                out.extend(_other(o, t, n, tally, session))
        except Exception as exc:  # one line that cannot be converted never costs the others
            for m in members:
                tally.mark(m, D.DAMAGED, f"could not be converted ({exc!r})")
            continue
        ops.extend(out)
    if boundary is not None:
        # The summary never came (the file was cut, or read while Claude Code was compacting):
        # Claude Code resumes from the last message with the history before it, and so do we.
        why = "compact_boundary without its summary: the compaction did not finish"
        tally.mark(boundary_line, D.STATE, why)
    return ops


def _facts(o: dict[str, Any], s: ClaudeSession) -> None:
    if s.session_id is None and isinstance(o.get("sessionId"), str):
        s.session_id = o["sessionId"]
    if s.agent_id is None and isinstance(o.get("agentId"), str):
        s.agent_id = o["agentId"]
    if s.cwd is None and isinstance(o.get("cwd"), str):
        s.cwd = o["cwd"]
    if s.version is None and isinstance(o.get("version"), str):
        s.version = o["version"]
    if s.started is None and isinstance(o.get("timestamp"), str):
        s.started = o["timestamp"]
    if not s.envelope:
        s.envelope = {k: o[k] for k in ("gitBranch", "slug", "userType", "entrypoint") if k in o}


def _env_update(env: tuple[Any, Any, Any], last: tuple[Any, Any, Any]) -> MetaUpdate:
    changed = {k: v for k, v, w in zip(("cwd", "gitBranch", "version"), env, last, strict=True)}
    cwd = env[0] if isinstance(env[0], str) and env[0] != last[0] else None
    return MetaUpdate(seq=0, ts=EPOCH, cwd=cwd, extra=_raw({KEY: changed}))


def _raw(value: Any) -> msgspec.Raw:
    return checked_raw(value)


def _envelope(o: dict[str, Any], **more: Any) -> dict[str, Any]:
    env = {k: o[k] for k in _ENVELOPE if k in o}
    env.update({k: v for k, v in more.items() if v is not None})
    return env


def _assistant(
    values: tuple[Any, ...],
    members: list[int],
    tally: Tally,
    s: ClaudeSession,
    calls: dict[str, str],
) -> list[Op]:
    first = values[members[0] - 1]
    last = values[members[-1] - 1]
    msg = dict(message(last))
    if first.get("isApiErrorMessage") or msg.get("model") == "<synthetic>":
        text = "".join(b.get("text", "") for b in blocks(first) if b.get("type") == "text")
        for n in members:
            tally.mark(n, D.IMPORTED, "event")
        s.tail = f"the last request failed ({first.get('error') or 'api error'})"
        return [_api_error(first, str(first.get("error") or "api_error"), text)]
    content: list[Any] = []
    for n in members:
        c = message(values[n - 1]).get("content")
        content.extend(c if isinstance(c, list) else [{"type": "text", "text": c}])
    msg["content"] = content
    msg.setdefault("role", "assistant")
    usage = msg.pop("usage", None)
    mid = msg.get("id")
    if isinstance(mid, str) and mid.startswith("msg_bdrk_"):
        s.bedrock = True
    if s.model is None and isinstance(msg.get("model"), str):
        s.model = msg["model"]
    try:
        m = anthropic.response_to_ledger(msg, endpoint="bedrock" if s.bedrock else None)
    except ProviderError as exc:
        for n in members:
            tally.mark(n, D.DAMAGED, f"an assistant response the Anthropic shape refuses: {exc}")
        return []
    m = _placeholders(m)
    env = _envelope(first, uuids=[values[n - 1].get("uuid") for n in members])
    m = msgspec.structs.replace(m, extra=merge_extra(m.extra, KEY, env))
    for call in m.tool_calls:
        calls[call.id] = call.name
    for n in members:
        kinds = {b.get("type") for b in blocks(values[n - 1])}
        tally.mark(
            n, D.IMPORTED, "reasoning" if kinds <= {"thinking", "redacted_thinking"} else "message"
        )
    for b in content:
        if (
            isinstance(b, dict)
            and b.get("type") == "tool_use"
            and b.get("name") in ("Task", "Agent")
        ):
            inp: dict[str, Any] = b["input"] if isinstance(b.get("input"), dict) else {}
            s.tasks[str(b.get("id"))] = (str(inp.get("prompt", "")), inp.get("subagent_type"))
    s.tail = "waiting for tool results" if m.tool_calls else "idle after the model's answer"
    ops: list[Op] = [m]
    if isinstance(usage, dict):
        ops.append(_usage(usage, mid, msg.get("model")))
    return ops


def _placeholders(m: Message) -> Message:
    """Signatures a publisher replaced by a placeholder are kept, out of ``signature``."""
    if not any(_is_placeholder(r.signature) or _is_placeholder(r.encrypted) for r in m.reasoning):
        return m
    fixed: list[Reasoning] = []
    for r in m.reasoning:
        if _is_placeholder(r.signature):
            r = msgspec.structs.replace(r, signature=None, placeholder=r.signature)
        elif _is_placeholder(r.encrypted):
            r = msgspec.structs.replace(r, encrypted=None, placeholder=r.encrypted)
        fixed.append(r)
    return msgspec.structs.replace(m, reasoning=tuple(fixed))


def _is_placeholder(value: str | None) -> bool:
    # Empty where a payload must be is a placeholder too (ADR 0126): never sent back as real.
    return value is not None and (value == "" or value.startswith("[REDACTED"))


def _usage(usage: dict[str, Any], rid: Any, model: Any) -> Usage:
    counts = {ours: usage[k] for k, ours in _USAGE_KEYS.items() if type(usage.get(k)) is int}
    rest = {k: v for k, v in usage.items() if k not in _USAGE_KEYS}
    return Usage(
        seq=0,
        ts=EPOCH,
        response_id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        extra=_raw({KEY: rest}) if rest else msgspec.UNSET,
        **counts,
    )


def _api_error(o: dict[str, Any], kind: str, text: Any) -> Event:
    said = text if isinstance(text, str) else ""
    return Event(
        seq=0,
        ts=EPOCH,
        kind=EventKind.API_ERROR.value,
        reason=f"the API failed ({kind}); the client's notice was not the model's answer",
        error=ErrorDetail(type=kind, message=said),
        extra=_raw({KEY: _envelope(o)}),
    )


def _user(
    o: dict[str, Any], n: int, tally: Tally, s: ClaudeSession, calls: dict[str, str]
) -> list[Op]:
    msg = message(o)
    content = msg.get("content")
    try:
        made = anthropic.to_ledger({"messages": [{"role": "user", "content": content}]})
    except ProviderError as exc:
        tally.mark(n, D.DAMAGED, f"a user message the Anthropic shape refuses: {exc}")
        return []
    ops: list[Op] = []
    results = iter(b for b in blocks(o) if b.get("type") == "tool_result")
    for m in made:
        env = _envelope(o)
        if m.role == Role.TOOL:
            next(results, None)
            env |= {k: o[k] for k in ("toolUseResult", "sourceToolAssistantUUID") if k in o}
            name = calls.get(m.tool_call_id or "")
            m = msgspec.structs.replace(m, name=name)
            _link(o, m.tool_call_id, s)
        ops.append(msgspec.structs.replace(m, extra=merge_extra(m.extra, KEY, env)))
    text = (
        content
        if isinstance(content, str)
        else "".join(b.get("text", "") for b in blocks(o) if b.get("type") == "text")
    )
    kind = "tool" if any(m.role == Role.TOOL for m in made) else "message"
    if text.startswith(_INTERRUPT):
        ops.append(Event(seq=0, ts=EPOCH, kind=EventKind.INTERRUPTED.value, reason=text))
        s.tail = "interrupted by the user"
    elif kind == "tool":
        s.tail = "after tool results, before the model's answer"
    else:
        s.tail = "waiting for the model's answer"
    tally.mark(n, D.IMPORTED, "message")
    return ops


def _link(o: dict[str, Any], call_id: str | None, s: ClaudeSession) -> None:
    tur = o.get("toolUseResult")
    if call_id and isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
        s.links[tur["agentId"]] = (call_id, s.tasks.get(call_id, ("", None))[1])


def _compaction(
    o: dict[str, Any], boundary: dict[str, Any] | None, n: int, tally: Tally
) -> Compaction:
    content = message(o).get("content")
    summary = content if isinstance(content, str) else None
    made = anthropic.to_ledger({"messages": [{"role": "user", "content": content}]})
    messages = tuple(
        msgspec.structs.replace(m, extra=merge_extra(m.extra, KEY, _envelope(o))) for m in made
    )
    facts = {}
    if boundary is not None:
        facts = {k: boundary.get(k) for k in ("compactMetadata", "logicalParentUuid", "uuid")}
    tally.mark(n, D.IMPORTED, "compacted")
    return Compaction(messages, summary, _raw({KEY: facts}))


def _other(o: dict[str, Any], t: Any, n: int, tally: Tally, s: ClaudeSession) -> list[Op]:
    if t == "progress":
        data: dict[str, Any] = o["data"] if isinstance(o.get("data"), dict) else {}
        if data.get("type") == "agent_progress" and isinstance(data.get("agentId"), str):
            call = o.get("parentToolUseID")
            if isinstance(call, str):
                s.links.setdefault(data["agentId"], (call, None))
        tally.mark(n, D.STATE, f"progress/{data.get('type')}: {_STATE['progress']}")
        return []
    if t in _STATE:
        tally.mark(n, D.STATE, f"{t}: {_STATE[t]}")
        return []
    if t == "summary" or t in _TITLES:
        title = o.get("summary") if t == "summary" else o.get("customTitle") or o.get("title")
        extra = _raw({KEY: {k: v for k, v in o.items() if k != "type"} | {"type": t}})
        tally.mark(n, D.METADATA, f"{t} (title)")
        return [
            MetaUpdate(
                seq=0, ts=EPOCH, title=title if isinstance(title, str) else None, extra=extra
            )
        ]
    if t == "last-prompt":
        tally.mark(n, D.STATE, "last-prompt: used to choose the session's last message")
        return []
    if t == "attachment" or t in _META_TYPES:
        sub = (o.get("attachment") or {}).get("type") if t == "attachment" else None
        tally.mark(n, D.METADATA, f"{t}/{sub}" if sub else str(t))
        return [MetaUpdate(seq=0, ts=EPOCH, extra=_raw({KEY: o}))]
    tally.mark(n, D.UNKNOWN, f"line type {t!r} is unknown to this importer")
    return []
