"""Realistic rollout lines for the decoding comparison (``benchmarks/decode_choices.py``).

The lines of an agent session: user turns, some with an image; assistant turns with reasoning
blocks and tool calls; tool outputs of a few KB; a redacted reasoning block closing each turn.
Either ASCII-only or with mixed CJK text, encoded with the library's own encoder.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

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
    encode_line,
    message_records,
)

__all__ = ["session_lines"]

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


def session_lines(rng: random.Random, n_lines: int, cjk: bool) -> list[bytes]:
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
