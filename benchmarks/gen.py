"""Realistic conversations for the benchmark, deterministic per seed.

A conversation is what a coding agent produces: a system prompt, user turns, assistant turns
with a reasoning block (text and an opaque signature) and one to three tool calls, tool outputs
of a few KB (code and logs, so with quotes, backslashes and line ends to escape), and a final
answer per turn. The ``cjk`` variant writes about half of the prose in Chinese or Japanese and
puts CJK comments into some tool outputs; ``ascii`` stays ASCII-only.

Text is cut from one large seeded pool at random offsets, so generating hundreds of MB costs
seconds, and every run with the same seed produces the same bytes. ``benchmarks/datasets.py``
writes them into sealed rollout files; ``benchmarks/peer_shapes.py`` gives them the peers' shapes.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import msgspec

from ledger import Message, Reasoning, Role, ToolCall

__all__ = [
    "GEN_VERSION",
    "VARIANTS",
    "BASE_TS",
    "iter_conversation",
    "conversation",
    "messages_for_bytes",
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
