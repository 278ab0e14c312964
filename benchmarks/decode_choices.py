"""Decoding speed of the codec choices, measured on realistic rollout lines (ADR 0002).

Generates the lines of an agent session (user turns; assistant turns with reasoning blocks and
tool calls; tool outputs of a few KB), once ASCII-only and once with mixed CJK text, encodes
them with the library's own encoder, and times decoding every line, in one run, with:

  (a) ``json.loads`` per line (dicts, no types, no validation)
  (b) msgspec typed decode into the record union (``ledger.codec.decode_record``)
  (c) msgspec untyped decode per line (dicts, no types)
  (d) ``json.loads`` + cattrs structuring into equivalent attrs classes
  (e) msgspec typed ``Decoder(Record).decode_lines`` on chunks of whole lines (4 MiB)
  (f) ``ledger.reader.iter_batches`` over the same bytes in memory: the reader's real path
      (chunked ``decode_lines``, line numbering, per-line fallback on damage), no reducer

Each variant's time is the median of interleaved rounds (ADR 0060). Ratios are times relative
to (b): ``2.0x`` means twice as slow as (b).

    .venv/bin/python benchmarks/decode_choices.py [--lines N] [--repeat R]
"""

from __future__ import annotations

import argparse
import base64
import gc
import io
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from importlib.metadata import version
from typing import Any

import attrs
import cattrs
import msgspec
from cattrs.strategies import configure_tagged_union

from ledger import (
    FORMAT_VERSION,
    MediaPart,
    Message,
    Origin,
    Reasoning,
    ReasoningKind,
    Role,
    SessionMeta,
    TextPart,
    ToolCall,
    decode_record,
    encode_line,
    message_records,
)
from ledger.reader import CHUNK_BYTES, iter_batches
from ledger.records import MessageRecord, ReasoningRecord, Record

# --- realistic lines -------------------------------------------------------------------------

_ASCII_TEXT = (
    "the function returns a tuple of records read from the file and the reducer folds them "
    "into state while the writer appends batches of lines under a lock so that readers see "
    "complete records only parse config value error path test module import class method "
    "argument default timeout retry cache buffer stream offset digest checkpoint session"
)
_ASCII_WORDS = _ASCII_TEXT.split()
_CJK_TEXT = (
    "函数 返回 记录 文件 读取 状态 写入 批量 检查点 会话 重放 指纹 压缩 消息 推理 工具 "
    "调用 输出 错误 路径 测试 模块 配置 缓存 超时 重试 偏移 序列 委派 子代理 终止 暂停"
)
_CJK_WORDS = _CJK_TEXT.split()
_CODE_LINES = (
    "def rebuild(path: Path) -> ReplayState:",
    "    with open(path, 'rb') as f:",
    "        return fold_lines(iter_entries(f))",
    "for i, line in enumerate(lines, start=1):",
    "    if not line.strip():",
    "        continue",
    "raise ValueError(f'bad value {value!r} at line {i}')",
    "import msgspec",
    "class Writer:",
    "    def append(self, message: Message) -> None:",
    "        self._queue.put_nowait(message)",
    "assert state.messages == expected",
)
_TOOLS = ("read_file", "run_shell", "search_code", "edit_file", "list_dir")


def _prose(rng: random.Random, n_words: int, cjk: bool) -> str:
    words = []
    for _ in range(n_words):
        if cjk and rng.random() < 0.45:
            words.append(rng.choice(_CJK_WORDS))
        else:
            words.append(rng.choice(_ASCII_WORDS))
    text = " ".join(words)
    return text.replace(" 。", "。") + ("。" if cjk else ".")


def _tool_output(rng: random.Random, cjk: bool) -> str:
    lines = []
    for _ in range(rng.randint(40, 140)):
        if rng.random() < 0.7:
            lines.append(rng.choice(_CODE_LINES))
        else:
            lines.append("# " + _prose(rng, rng.randint(4, 14), cjk))
    return "\n".join(lines)


def _signature(rng: random.Random, n: int) -> str:
    return base64.b64encode(rng.randbytes(n)).decode("ascii")


def _session(rng: random.Random, n_lines: int, cjk: bool) -> list[bytes]:
    """The lines of one session of about ``n_lines`` records, as the writer encodes them."""
    t0 = datetime(2026, 12, 2, 9, 0, 0, tzinfo=UTC)
    origin = Origin(provider="anthropic", api="messages", model="claude-sonnet-4-5")
    meta = SessionMeta(
        seq=1,
        ts=t0,
        format_version=FORMAT_VERSION,
        session_id="0f5e2d7a-3c1b-4e8f-9a6d-2b7c4e1f0a93",
        started_at=t0,
        agent_name="code_reviewer",
        model="claude-sonnet-4-5",
        provider="anthropic",
        cwd="/srv/project",
    )
    lines = [encode_line(meta)]
    seq = 2
    turn = 0

    def emit(message: Message) -> None:
        nonlocal seq
        ts = t0 + timedelta(milliseconds=37 * seq)
        for rec in message_records(message, first_seq=seq, ts=ts):
            lines.append(encode_line(rec))
            seq += 1

    emit(Message(role=Role.SYSTEM, content=_prose(rng, 300, cjk)))
    while len(lines) < n_lines:
        turn += 1
        if rng.random() < 0.1:
            content: Any = (
                TextPart(text=_prose(rng, rng.randint(10, 60), cjk)),
                MediaPart(media_type="image/png", url=f"https://example.com/shot-{turn}.png"),
            )
        else:
            content = _prose(rng, rng.randint(10, 80), cjk)
        emit(Message(role=Role.USER, content=content))
        for _step in range(rng.randint(1, 4)):
            calls = tuple(
                ToolCall(
                    id=f"toolu_{turn:04d}_{k}_{rng.getrandbits(40):010x}",
                    name=rng.choice(_TOOLS),
                    arguments=json.dumps(
                        {
                            "path": f"src/ledger/module_{rng.randint(1, 40)}.py",
                            "pattern": _prose(rng, rng.randint(2, 8), cjk),
                            "limit": rng.randint(10, 500),
                        },
                        ensure_ascii=False,
                    ),
                )
                for k in range(rng.randint(1, 3))
            )
            reasoning = tuple(
                Reasoning(
                    text=_prose(rng, rng.randint(40, 300), cjk),
                    signature=_signature(rng, rng.randint(200, 600)),
                    origin=origin,
                )
                for _ in range(rng.choice((1, 1, 1, 2)))
            )
            emit(
                Message(
                    role=Role.ASSISTANT,
                    content=_prose(rng, rng.randint(5, 60), cjk),
                    reasoning=reasoning,
                    tool_calls=calls,
                    item_id=f"msg_{rng.getrandbits(64):016x}",
                    origin=origin,
                )
            )
            for call in calls:
                emit(
                    Message(
                        role=Role.TOOL,
                        content=_tool_output(rng, cjk),
                        tool_call_id=call.id,
                        name=call.name,
                        is_error=rng.random() < 0.05,
                    )
                )
        emit(
            Message(
                role=Role.ASSISTANT,
                content=_prose(rng, rng.randint(30, 200), cjk),
                reasoning=(
                    Reasoning(
                        kind=ReasoningKind.REDACTED,
                        encrypted=_signature(rng, rng.randint(300, 900)),
                        origin=origin,
                    ),
                ),
                origin=origin,
            )
        )
    return lines[:n_lines]


# --- (d): attrs mirrors of the wire types, structured by cattrs ------------------------------


class ARole(StrEnum):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class AReasoningKind(StrEnum):
    THINKING = "thinking"
    REDACTED = "redacted"
    SUMMARY = "summary"
    ENCRYPTED = "encrypted"


@attrs.frozen
class AOrigin:
    provider: str | None = None
    api: str | None = None
    model: str | None = None
    endpoint: str | None = None


@attrs.frozen
class ATextPart:
    text: str
    signature: str | None = None


@attrs.frozen
class AMediaPart:
    media_type: str
    url: str | None = None
    data: str | None = None
    name: str | None = None


@attrs.frozen
class AOpaquePart:
    data: Any
    provider: str | None = None


AContentPart = ATextPart | AMediaPart | AOpaquePart


@attrs.frozen
class AReasoning:
    text: str | None = None
    kind: AReasoningKind = AReasoningKind.THINKING
    summary: tuple[str, ...] = ()
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None
    origin: AOrigin | None = None
    extra: Any = None


@attrs.frozen
class AToolCall:
    id: str
    name: str
    arguments: str = ""
    item_id: str | None = None
    signature: str | None = None
    extra: Any = None


@attrs.frozen
class AMessage:
    role: ARole
    content: str | tuple[AContentPart, ...] | None = None
    reasoning: tuple[AReasoning, ...] = ()
    tool_calls: tuple[AToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    name: str | None = None
    item_id: str | None = None
    origin: AOrigin | None = None
    extra: Any = None
    is_anchored: bool = False
    truncation_marker: str | None = None


@attrs.frozen
class ASessionMeta:
    seq: int
    ts: datetime
    format_version: int
    session_id: str
    started_at: datetime
    agent_name: str | None = None
    parent_session_id: str | None = None
    delegation_id: str | None = None
    model: str | None = None
    provider: str | None = None
    cwd: str | None = None
    project: str | None = None
    extra: Any = None


@attrs.frozen
class AMessageRecord:
    seq: int
    ts: datetime
    message: AMessage


@attrs.frozen
class AReasoningRecord:
    seq: int
    ts: datetime
    reasoning: AReasoning


ARecord = ASessionMeta | AMessageRecord | AReasoningRecord
# cattrs takes the union as a runtime value; typed as Any so the calls below type-check.
_ARECORD: Any = ARecord

_RECORD_TAGS = {
    ASessionMeta: "session_meta",
    AMessageRecord: "message",
    AReasoningRecord: "reasoning",
}
_PART_TAGS = {ATextPart: "text", AMediaPart: "media", AOpaquePart: "opaque"}


def _cattrs_converter() -> cattrs.Converter:
    """A converter that reads the same lines as ``decode_record`` into the attrs mirrors."""
    c = cattrs.Converter(forbid_extra_keys=False)
    c.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
    c.register_structure_hook(Any, lambda v, _: v)
    configure_tagged_union(AContentPart, c, tag_generator=_PART_TAGS.__getitem__, tag_name="type")
    structure_parts = c.get_structure_hook(tuple[AContentPart, ...])

    def structure_content(value: Any, _: Any) -> str | tuple[AContentPart, ...] | None:
        if value is None or isinstance(value, str):
            return value
        return structure_parts(value, tuple[AContentPart, ...])  # type: ignore[no-any-return]

    c.register_structure_hook(str | tuple[AContentPart, ...] | None, structure_content)
    configure_tagged_union(_ARECORD, c, tag_generator=_RECORD_TAGS.__getitem__, tag_name="type")
    return c


# --- timing ----------------------------------------------------------------------------------


def _interleaved_medians(
    repeat: int, variants: Sequence[tuple[str, Callable[[], object]]]
) -> list[tuple[str, float]]:
    """Median time of each variant over ``repeat`` rounds; each round runs every variant once,
    in an order rotated by one per round, so that a slow moment on a shared machine hits all
    variants alike (the method of ADR 0060)."""
    times: list[list[float]] = [[] for _ in variants]
    n = len(variants)
    for r in range(repeat):
        for k in range(n):
            i = (k + r) % n
            gc.collect()
            t = time.perf_counter()
            variants[i][1]()
            times[i].append(time.perf_counter() - t)
    return [(name, statistics.median(ts)) for (name, _), ts in zip(variants, times, strict=True)]


def _variants(lines: Sequence[bytes]) -> list[tuple[str, Callable[[], object]]]:
    loads = json.loads
    untyped = msgspec.json.Decoder().decode
    typed_lines = msgspec.json.Decoder(Record).decode_lines
    data = b"".join(lines)
    chunks = _chunks(data, CHUNK_BYTES)
    converter = _cattrs_converter()
    structure = converter.structure

    def a() -> object:
        return [loads(x) for x in lines]

    def b() -> object:
        return [decode_record(x) for x in lines]

    def c() -> object:
        return [untyped(x) for x in lines]

    def d() -> object:
        return [structure(loads(x), _ARECORD) for x in lines]

    def e() -> object:
        return [typed_lines(chunk) for chunk in chunks]

    def f() -> object:
        return list(iter_batches(io.BytesIO(data)))

    return [
        ("(a) json.loads per line", a),
        ("(b) msgspec typed (decode_record)", b),
        ("(c) msgspec untyped", c),
        ("(d) json.loads + cattrs -> attrs", d),
        ("(e) msgspec typed decode_lines", e),
        ("(f) ledger.reader.iter_batches", f),
    ]


def _chunks(data: bytes, size: int) -> list[bytes]:
    """Cut ``data`` into pieces of about ``size`` bytes, each ending at a line end."""
    out = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + size)
        end = len(data) if end < 0 else end + 1
        out.append(data[start:end])
        start = end
    return out


def _check_equivalent(lines: Sequence[bytes]) -> None:
    """Refuse to report figures unless (b) and (d) read the same content from every line."""
    converter = _cattrs_converter()
    for raw in lines:
        typed = decode_record(raw)
        mirror = converter.structure(json.loads(raw), _ARECORD)
        assert mirror.seq == typed.seq, raw[:80]
        if isinstance(typed, MessageRecord):
            assert isinstance(mirror, AMessageRecord)
            m, am = typed.message, mirror.message
            assert (m.role.value, len(m.tool_calls)) == (am.role.value, len(am.tool_calls))
            assert m.text() == (
                am.content
                if isinstance(am.content, str)
                else "".join(p.text for p in am.content or () if isinstance(p, ATextPart))
            )
        elif isinstance(typed, ReasoningRecord):
            assert isinstance(mirror, AReasoningRecord)
            assert typed.reasoning.signature == mirror.reasoning.signature
            assert typed.reasoning.encrypted == mirror.reasoning.encrypted


def run(n_lines: int, repeat: int, seed: int) -> None:
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
        f"msgspec {version('msgspec')}, cattrs {version('cattrs')}, attrs {version('attrs')}"
    )
    print(
        f"{n_lines} lines per run, median of {repeat} interleaved rounds; "
        "ratio = time / time of (b)\n"
    )
    for label, cjk in (("ASCII-only", False), ("mixed CJK", True)):
        lines = _session(random.Random(seed), n_lines, cjk)
        _check_equivalent(lines)
        size = sum(len(x) for x in lines)
        print(f"{label}: {size / 1e6:.1f} MB, mean line {size / len(lines) / 1e3:.1f} KB")
        timings = _interleaved_medians(repeat, _variants(lines))
        base = timings[1][1]
        print(f"  {'variant':<36}{'seconds':>9}{'MB/s':>9}{'ratio':>8}")
        for name, t in timings:
            print(f"  {name:<36}{t:>9.3f}{size / t / 1e6:>9.0f}{t / base:>7.2f}x")
        print()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--lines", type=int, default=12000, help="records per run (default 12000)")
    parser.add_argument(
        "--repeat", type=int, default=7, help="interleaved rounds; the median is kept"
    )
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args(argv)
    run(args.lines, args.repeat, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
