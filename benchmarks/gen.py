"""Realistic rollouts for the benchmark: conversations, rollout files and the peers' shapes.

A conversation is what a coding agent produces: a system prompt, user turns, assistant turns
with a reasoning block (text and an opaque signature) and one to three tool calls, tool outputs
of a few KB (code and logs, so with quotes, backslashes and line ends to escape), and a final
answer per turn. The ``cjk`` variant writes about half of the prose in Chinese or Japanese and
puts CJK comments into some tool outputs; ``ascii`` stays ASCII-only.

Text is cut from one large seeded pool at random offsets, so generating hundreds of MB costs
seconds, and every run with the same seed produces the same bytes. Files are written with the
library's own encoder (``encode_line``, ``message_records``) and sealed with a checkpoint
computed by ``checkpoint_digest``, exactly as the writer's terminal path would seal them.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import msgspec

from ledger import (
    FORMAT_VERSION,
    AgentCheckpoint,
    Compacted,
    Message,
    Reasoning,
    Role,
    SessionMeta,
    StopKind,
    Terminal,
    ToolCall,
    checkpoint_digest,
    encode_line,
    message_records,
    rollout_filename,
)

__all__ = [
    "GEN_VERSION",
    "VARIANTS",
    "Dataset",
    "conversation",
    "dataset",
    "iter_conversation",
    "to_langchain",
    "to_openai_items",
    "to_plain_dict",
]

GEN_VERSION: Final = 1
"""Bump when the generator's output changes, so cached files are rebuilt."""

VARIANTS: Final = ("ascii", "cjk")

BASE_TS: Final = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)

_WORDS_TEXT = (
    "the function returns a tuple of records read from file and reducer folds them into state "
    "while writer appends batches lines under lock so that readers see complete values only "
    "parse config before starting worker then check error path when disk is full or permission "
    "denied test fails because fixture leaks temporary directory between runs fix by using "
    "unique root per test module import cycle between replay ledger must never happen again "
    "schema golden file differs regenerate with make schema and commit result after review "
    "cache invalidation budget tokens estimate counter window compaction summary checkpoint "
    "digest verified mismatch sequence gap duplicate terminal paused cancelled completed"
)
_WORDS = tuple(_WORDS_TEXT.split())

# Common CJK characters (Chinese, some Japanese kana) and their punctuation.
_CJK = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产"
    "种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从"
    "业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又"
    "么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位"
    "入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放"
    "ファイルを読み込んでから関数を呼び出すとエラーが発生しますテストは失敗しました確認してください"
)
# Full-width punctuation (comma, full stop, colon, question mark, brackets...) by code point.
_CJK_PUNCT = "".join(
    map(
        chr,
        (0xFF0C, 0x3002, 0x3001, 0xFF1A, 0xFF1B, 0xFF1F, 0xFF01, 0x300C, 0x300D, 0xFF08, 0xFF09),
    )
)

_TOOLS = ("read_file", "run_tests", "grep", "apply_patch", "list_dir", "shell")

_CODE = '''def rebuild(path: str, *, max_line_bytes: int = 512 * 1024 * 1024) -> "ReplayState":
    """Rebuild the state of the whole rollout at ``path``."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith(b"\\n"):
                yield lineno, Degradation(kind="torn_tail", detail=f"{len(raw)} bytes")
            state = apply(state, decode_record(raw), line=lineno)
    return state

FAILED tests/test_writer.py::test_drain - AssertionError: 'sha256:9f2c' != 'sha256:01ab'
E       assert {"seq": 41, "type": "message"} == {"seq": 42, "type": "message"}
E         Differing items: {'seq': 41} != {'seq': 42}
	at C:\\\\Users\\\\dev\\\\project\\\\src\\\\ledger\\\\writer.py:118 in _worker
2026-11-30T09:00:01.123Z INFO  worker flushed batch size=32 bytes=65536 elapsed_ms=0.42
'''

_POOL_CHARS: Final = 1 << 20


@dataclass(frozen=True)
class _Pools:
    prose: str
    code: str


def _ascii_prose(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        sentence = " ".join(rng.choices(_WORDS, k=rng.randint(6, 18))).capitalize()
        sentence += rng.choice((". ", ". ", "? ", ": `x = f(y)`. ", ".\n\n"))
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:n]


def _cjk_prose(rng: random.Random, n: int) -> str:
    # Mixed text as people write it: CJK sentences with identifiers and English terms inside.
    out: list[str] = []
    size = 0
    while size < n:
        if rng.random() < 0.5:
            s = "".join(rng.choices(_CJK, k=rng.randint(8, 30)))
            s += rng.choice((" `read_replay()` ", " digest ", " ", "")) + rng.choice(_CJK_PUNCT)
        else:
            s = " ".join(rng.choices(_WORDS, k=rng.randint(4, 12))).capitalize() + ". "
        out.append(s)
        size += len(s)
    return "".join(out)[:n]


def _code_pool(rng: random.Random, n: int, cjk: bool) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        chunk = _CODE
        if cjk and rng.random() < 0.4:
            chunk = chunk.replace("Rebuild the state", "".join(rng.choices(_CJK, k=20)))
        chunk = chunk.replace("41", str(rng.randint(1, 99999)))
        out.append(chunk)
        size += len(chunk)
    return "".join(out)[:n]


_POOLS: dict[str, _Pools] = {}


def _pools(variant: str) -> _Pools:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: use one of {VARIANTS}")
    pools = _POOLS.get(variant)
    if pools is None:
        rng = random.Random(f"pool-{variant}")
        cjk = variant == "cjk"
        prose = _cjk_prose(rng, _POOL_CHARS) if cjk else _ascii_prose(rng, _POOL_CHARS)
        pools = _Pools(prose=prose, code=_code_pool(rng, _POOL_CHARS, cjk))
        _POOLS[variant] = pools
    return pools


def _cut(rng: random.Random, pool: str, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi)
    start = rng.randrange(0, len(pool) - n)
    return pool[start : start + n]


def _hex(rng: random.Random, n: int) -> str:
    return rng.getrandbits(n * 4).to_bytes((n * 4 + 7) // 8, "big").hex()[:n]


def iter_conversation(variant: str, *, seed: int = 0) -> Iterator[Message]:
    """Yield the messages of an endless realistic conversation (deterministic per seed)."""
    p = _pools(variant)
    rng = random.Random(f"conversation-{variant}-{seed}")
    yield Message(role=Role.SYSTEM, content=_cut(rng, p.prose, 1500, 2500))
    while True:
        yield Message(role=Role.USER, content=_cut(rng, p.prose, 80, 800))
        for _ in range(rng.randint(1, 3)):
            calls = tuple(
                ToolCall(
                    id="call_" + _hex(rng, 24),
                    name=rng.choice(_TOOLS),
                    arguments=json.dumps(
                        {
                            "path": f"src/ledger/{_hex(rng, 6)}.py",
                            "query": _cut(rng, p.prose, 20, 120),
                        },
                        ensure_ascii=False,
                    ),
                    item_id="fc_" + _hex(rng, 32),
                )
                for _ in range(rng.randint(1, 3))
            )
            sig = base64.b64encode(rng.randbytes(rng.randint(150, 400))).decode()
            yield Message(
                role=Role.ASSISTANT,
                content=_cut(rng, p.prose, 0, 200) or None,
                reasoning=(Reasoning(text=_cut(rng, p.prose, 200, 1800), signature=sig),),
                tool_calls=calls,
                item_id="msg_" + _hex(rng, 32),
            )
            for call in calls:
                yield Message(
                    role=Role.TOOL,
                    content=_cut(rng, p.code, 800, 6000),
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=rng.random() < 0.05,
                )
        yield Message(
            role=Role.ASSISTANT,
            content=_cut(rng, p.prose, 200, 1500),
            item_id="msg_" + _hex(rng, 32),
        )


def conversation(n: int, variant: str, *, seed: int = 0) -> list[Message]:
    """The first ``n`` messages of the conversation of ``variant`` and ``seed``."""
    return list(itertools.islice(iter_conversation(variant, seed=seed), n))


# --- rollout files -------------------------------------------------------------------------------


def _meta(
    session_id: str,
    started: datetime,
    agent_name: str | None = None,
    parent: str | None = None,
    delegation: str | None = None,
) -> SessionMeta:
    return SessionMeta(
        seq=1,
        ts=started,
        format_version=FORMAT_VERSION,
        session_id=session_id,
        started_at=started,
        agent_name=agent_name,
        parent_session_id=parent,
        delegation_id=delegation,
        model="gpt-bench",
        provider="openai",
        cwd="/srv/project",
        project="bench",
    )


def write_rollout(
    directory: Path,
    session_id: str,
    messages: Callable[[], Iterable[Message]],
    *,
    compact_keep: int | None = None,
    tail_after_compaction: Iterable[Message] = (),
    stop: StopKind = StopKind.PAUSED,
    agent_name: str | None = None,
    parent: str | None = None,
    delegation: str | None = None,
    after_stop: Iterable[Message] = (),
) -> Path:
    """Write a sealed rollout of ``messages()`` (called twice: body, digest) into ``directory``.

    With ``compact_keep``, a ``compacted`` record keeping the last ``compact_keep`` messages
    follows the body, then ``tail_after_compaction``: the replayed window is that small part.
    With ``after_stop``, those messages follow the terminal record: a session resumed after its
    stop and then killed, so the last checkpoint is no longer at the tail.
    The file is written under a temporary name and renamed, so a cached file is always whole.
    """
    directory.mkdir(parents=True, exist_ok=True)
    name = rollout_filename(BASE_TS, session_id, agent_name)
    path = directory / name
    tmp = directory / (name + ".part")
    ts = BASE_TS
    seq = 1
    buf = bytearray()
    kept: list[Message] = []
    tail = list(tail_after_compaction)
    with open(tmp, "wb") as f:
        buf += encode_line(_meta(session_id, BASE_TS, agent_name, parent, delegation))
        for m in messages():
            seq += 1
            for rec in message_records(m, first_seq=seq, ts=ts):
                buf += encode_line(rec)
                seq = rec.seq
            if compact_keep is not None:
                kept.append(m)
                if len(kept) > 2 * compact_keep:
                    del kept[:-compact_keep]
            if len(buf) >= 1 << 22:
                f.write(buf)
                buf.clear()
        if compact_keep is not None:
            window = tuple(kept[-compact_keep:])
            seq += 1
            buf += encode_line(Compacted(seq=seq, ts=ts, messages=window, summary="compacted"))
            for m in tail:
                seq += 1
                for rec in message_records(m, first_seq=seq, ts=ts):
                    buf += encode_line(rec)
                    seq = rec.seq
            rebuilt = window + tuple(tail)
            digest = checkpoint_digest(tail, compacted=window)
            count = len(rebuilt)
        else:
            counter = _Counting(messages())
            digest = checkpoint_digest(counter)
            count = counter.n
        end = ts + timedelta(seconds=1)
        buf += encode_line(AgentCheckpoint(seq=seq + 1, ts=end, digest=digest, message_count=count))
        buf += encode_line(Terminal(seq=seq + 2, ts=end, stop_kind=stop.value, reason="bench"))
        seq += 2
        for m in after_stop:
            seq += 1
            for rec in message_records(m, first_seq=seq, ts=end):
                buf += encode_line(rec)
                seq = rec.seq
        f.write(buf)
    os.replace(tmp, path)
    return path


class _Counting:
    """An iterable that counts what passes through it (for the checkpoint's message count)."""

    def __init__(self, it: Iterable[Message]) -> None:
        self._it = it
        self.n = 0

    def __iter__(self) -> Iterator[Message]:
        for m in self._it:
            self.n += 1
            yield m


def messages_for_bytes(variant: str, target: int, *, seed: int = 0) -> list[Message]:
    """The shortest prefix of the conversation whose records take at least ``target`` bytes."""
    out: list[Message] = []
    size = 0
    for m in iter_conversation(variant, seed=seed):
        out.append(m)
        size += len(msgspec.json.encode(m)) + 60
        if size >= target:
            return out
    raise AssertionError("unreachable: the conversation is endless")


# --- the cache -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """One cached rollout file and what it holds."""

    path: Path
    messages: int
    bytes: int


def data_root() -> Path:
    """Where generated data is cached (gitignored); ``BENCH_DATA`` overrides it."""
    env = os.environ.get("BENCH_DATA")
    return Path(env) if env else Path(__file__).resolve().parent / "data"


def _key(*parts: object) -> str:
    text = "-".join(str(p) for p in (f"g{GEN_VERSION}", *parts))
    return text + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def dataset(key_parts: tuple[object, ...], build: Callable[[Path], Path]) -> Dataset:
    """Return the cached dataset named by ``key_parts``, building it once with ``build(dir)``."""
    d = data_root() / _key(*key_parts)
    manifest = d / "manifest.json"
    if manifest.exists():
        info = json.loads(manifest.read_text())
        path = d / info["file"]
        if path.exists() and path.stat().st_size == info["bytes"]:
            return Dataset(path=path, messages=info["messages"], bytes=info["bytes"])
    path = build(d)
    messages = _count_messages(path)
    info = {"file": path.name, "bytes": path.stat().st_size, "messages": messages}
    manifest.write_text(json.dumps(info))
    return Dataset(path=path, messages=messages, bytes=info["bytes"])


def _count_messages(path: Path) -> int:
    # The messages replay rebuilds: the last checkpoint's count plus the messages after it
    # (a session resumed after its stop point and killed has some).
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - (1 << 22)))
        lines = f.read().splitlines()
    after = 0
    for line in reversed(lines):
        if line.startswith(b'{"type":"message"'):
            after += 1
        elif line.startswith(b'{"type":"agent_checkpoint"'):
            return int(msgspec.json.decode(line)["message_count"]) + after
    raise ValueError(f"{path}: no checkpoint in the last 4 MB")


# --- the peers' shapes ---------------------------------------------------------------------------


def to_plain_dict(m: Message) -> dict[str, Any]:
    """The message as the plain dict a framework without this library would hold."""
    out: dict[str, Any] = msgspec.to_builtins(m)
    return out


def to_openai_items(m: Message) -> list[dict[str, Any]]:
    """The message as OpenAI Responses input items (what ``SQLiteSession`` stores)."""
    if m.role in (Role.SYSTEM, Role.USER, Role.DEVELOPER):
        return [{"role": m.role.value, "content": m.text()}]
    if m.role == Role.TOOL:
        return [{"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text()}]
    items: list[dict[str, Any]] = []
    for r in m.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": "rs_" + (m.item_id or "x")[4:],
                "summary": [],
                "content": [{"type": "reasoning_text", "text": r.text or ""}],
                "encrypted_content": r.signature,
            }
        )
    if m.content:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": m.item_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": m.text(), "annotations": []}],
            }
        )
    for c in m.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": c.item_id,
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
        )
    return items


def to_langchain(m: Message) -> Any:
    """The message as the LangChain message a LangGraph ``MessagesState`` holds."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if m.role in (Role.SYSTEM, Role.DEVELOPER):
        return SystemMessage(content=m.text())
    if m.role == Role.USER:
        return HumanMessage(content=m.text())
    if m.role == Role.TOOL:
        return ToolMessage(content=m.text(), tool_call_id=m.tool_call_id or "", name=m.name)
    reasoning = [{"text": r.text, "signature": r.signature} for r in m.reasoning]
    return AIMessage(
        content=m.text(),
        id=m.item_id,
        tool_calls=[
            {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
            for c in m.tool_calls
        ],
        additional_kwargs={"reasoning": reasoning} if reasoning else {},
    )
