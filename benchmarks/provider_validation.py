"""Checking provider payloads: cattrs against msgspec.convert, for clarity of errors and speed.

Both libraries check the same Anthropic Messages request (a coding-agent session: user turns,
assistant turns with signed thinking, redacted thinking, text and tool use, tool results of a
few KB) against the same declared shape: attrs classes with a cattrs tagged union for the
blocks, and ``msgspec.Struct`` mirrors with a msgspec tagged union. Three variants, each the
median of interleaved rounds (ADR 0060):

  (a) cattrs ``Converter.structure`` (detailed validation, the default)
  (b) ``msgspec.convert`` of the whole request
  (c) ``ledger.providers.anthropic.to_ledger``: the adapter's real path (per-object
      ``msgspec.convert`` checks, residues, ledger messages)

Then each is given the same broken payloads and its error is printed as the caller sees it.

    .venv/bin/python benchmarks/provider_validation.py [--turns N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any, Literal

import attrs
import cattrs
import msgspec
from cattrs.strategies import configure_tagged_union

from ledger.providers import ProviderError, anthropic

# --- the shape, twice ------------------------------------------------------------------------


@attrs.frozen
class AText:
    text: str


@attrs.frozen
class AThinking:
    thinking: str
    signature: str


@attrs.frozen
class ARedacted:
    data: str


@attrs.frozen
class AToolUse:
    id: str
    name: str
    input: dict[str, Any]


@attrs.frozen
class AToolResult:
    tool_use_id: str
    content: str | None = None
    is_error: bool | None = None


ABlock = AText | AThinking | ARedacted | AToolUse | AToolResult


@attrs.frozen
class AMessage:
    role: Literal["user", "assistant"]
    content: str | list[ABlock]


@attrs.frozen
class ARequest:
    messages: list[AMessage]
    system: str | None = None


_TAGS = {
    AText: "text",
    AThinking: "thinking",
    ARedacted: "redacted_thinking",
    AToolUse: "tool_use",
    AToolResult: "tool_result",
}
converter = cattrs.Converter(forbid_extra_keys=False)
configure_tagged_union(ABlock, converter, tag_name="type", tag_generator=_TAGS.__getitem__)
converter.register_structure_hook(
    str | list[ABlock],
    lambda v, _: v if isinstance(v, str) else converter.structure(v, list[ABlock]),
)


class MText(msgspec.Struct, tag="text"):
    text: str


class MThinking(msgspec.Struct, tag="thinking"):
    thinking: str
    signature: str


class MRedacted(msgspec.Struct, tag="redacted_thinking"):
    data: str


class MToolUse(msgspec.Struct, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class MToolResult(msgspec.Struct, tag="tool_result"):
    tool_use_id: str
    content: str | None = None
    is_error: bool | None = None


class MMessage(msgspec.Struct):
    role: Literal["user", "assistant"]
    content: str | list[MText | MThinking | MRedacted | MToolUse | MToolResult]


class MRequest(msgspec.Struct):
    messages: list[MMessage]
    system: str | None = None


# --- a realistic session ---------------------------------------------------------------------


def session(turns: int, rng: random.Random) -> dict[str, Any]:
    """An Anthropic request of ``turns`` tool-using turns, with a few KB per tool result."""
    words = [
        "the",
        "of",
        "a",
        "to",
        "in",
        "file",
        "function",
        "return",
        "value",
        "test",
        "line",
        "error",
        "path",
        "call",
    ]

    def prose(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    messages: list[dict[str, Any]] = [{"role": "user", "content": prose(40)}]
    for t in range(turns):
        sig = "".join(rng.choice("ABCDEFabcdef0123456789+/") for _ in range(300))
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": prose(80), "signature": sig},
            {"type": "text", "text": prose(20)},
            {
                "type": "tool_use",
                "id": f"toolu_{t}",
                "name": "read_file",
                "input": {"path": f"src/m{t}.py", "limit": 400},
            },
        ]
        if t % 5 == 4:
            blocks.insert(1, {"type": "redacted_thinking", "data": sig})
        messages.append({"role": "assistant", "content": blocks})
        result = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{t}",
            "content": prose(rng.randint(250, 900)),
        }
        messages.append({"role": "user", "content": [result]})
    return {"system": prose(200), "messages": messages}


def timed(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def broken(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The same request with one fault each, at ``messages[3]``."""
    import copy

    cases = []
    a = copy.deepcopy(request)
    a["messages"][3]["content"][0]["signature"] = 12
    cases.append(("signature is a number", a))
    b = copy.deepcopy(request)
    del b["messages"][3]["content"][2]["input"]
    cases.append(("tool_use without input", b))
    c = copy.deepcopy(request)
    c["messages"][3]["role"] = "robot"
    cases.append(("unknown role", c))
    return cases


def errors(request: dict[str, Any]) -> None:
    for what, bad in broken(request):
        print(f"\n{what}:")
        try:
            converter.structure(bad, ARequest)
        except Exception as exc:
            print(
                "  cattrs          :",
                type(exc).__name__,
                "|",
                "; ".join(cattrs.transform_error(exc))[:300],
            )
        try:
            msgspec.convert(bad, MRequest)
        except msgspec.ValidationError as exc:
            print("  msgspec.convert :", exc)
        try:
            anthropic.to_ledger(bad)
        except ProviderError as exc:
            print("  to_ledger       :", exc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    request = session(args.turns, random.Random(7))
    size = len(msgspec.json.encode(request))
    assert converter.structure(request, ARequest).messages[1].content[0].signature  # type: ignore[union-attr]
    variants = {
        "(a) cattrs structure": lambda: converter.structure(request, ARequest),
        "(b) msgspec.convert": lambda: msgspec.convert(request, MRequest),
        "(c) anthropic.to_ledger": lambda: anthropic.to_ledger(request),
    }
    results: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.repeat):  # interleaved rounds
        for name, fn in variants.items():
            results[name].append(timed(fn, 1))
    base = statistics.median(results["(b) msgspec.convert"])
    libs = f"cattrs {version('cattrs')}, msgspec {version('msgspec')}"
    print(f"{libs}; request of {args.turns} turns, {size / 1e3:.0f} KB")
    for name, times in results.items():
        t = statistics.median(times)
        print(f"{name:26} {t * 1e3:8.2f} ms  {size / t / 1e6:7.1f} MB/s  {t / base:5.1f}x")
    errors(request)


if __name__ == "__main__":
    main()
