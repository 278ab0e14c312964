"""The round-trip law of every provider adapter, in memory and through a rollout file, and the
cross-provider properties: any pair gives a valid request and never sends foreign reasoning."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import Durability, Message, RolloutWriter, StopKind, TextPart
from ledger.providers import anthropic, gemini, openai_chat, openai_responses
from provider_rules import CHECKS
from replay import read_replay

ADAPTERS: dict[str, tuple[Any, st.SearchStrategy[dict[str, Any]]]] = {
    "openai_chat": (openai_chat, s.chat_requests()),
    "openai_responses": (openai_responses, s.responses_requests()),
    "anthropic": (anthropic, s.anthropic_requests()),
    "gemini": (gemini, s.gemini_requests()),
}
SHAPES = sorted(ADAPTERS)


def exact(value: Any) -> str:
    """JSON text that tells key order, ``null`` from absent and ``1`` from ``1.0`` apart."""
    return json.dumps(value, ensure_ascii=False)


def opaque_values(messages: tuple[Message, ...]) -> set[str]:
    """Every signature and encrypted payload the messages hold."""
    found: set[str] = set()
    for m in messages:
        for r in m.reasoning:
            found |= {v for v in (r.signature, r.encrypted) if v}
        found |= {c.signature for c in m.tool_calls if c.signature}
        if isinstance(m.content, tuple):
            found |= {p.signature for p in m.content if isinstance(p, TextPart) and p.signature}
    return found


@pytest.mark.parametrize("shape", SHAPES)
@given(data=st.data())
def test_from_ledger_of_to_ledger_is_the_request(shape: str, data: st.DataObject) -> None:
    """The request is valid for its provider; from_ledger(to_ledger(req)) == req byte for byte,
    in memory and after RolloutWriter, a pause and read_replay, with nothing left out."""
    module, requests = ADAPTERS[shape]
    request = data.draw(requests)
    CHECKS[shape](request)  # the generator makes what the provider accepts
    messages = module.to_ledger(request)
    conversion = module.export(messages)
    assert conversion.left_out == ()
    assert exact(conversion.request) == exact(request)
    assert exact(module.from_ledger(messages)) == exact(request)
    with tempfile.TemporaryDirectory() as d:
        with RolloutWriter.create(d, durability=Durability.OS) as writer:
            for m in messages:
                writer.append(m)
            writer.stop(StopKind.PAUSED)
        replay = read_replay(writer.path)
    assert replay.verified
    assert replay.degraded == ()
    assert exact(module.from_ledger(replay.messages)) == exact(request)


@pytest.mark.parametrize("source", SHAPES)
@given(data=st.data())
def test_any_pair_gives_a_valid_request_without_foreign_reasoning(
    source: str, data: st.DataObject
) -> None:
    """For every other shape b, b.export(a.to_ledger(req)) passes b's rules, sends no opaque
    value of a, and lists every reasoning block of a as left out."""
    module, requests = ADAPTERS[source]
    messages = module.to_ledger(data.draw(requests))
    reasoning = sum(len(m.reasoning) for m in messages)
    for goal in SHAPES:
        if goal == source:
            continue
        conversion = ADAPTERS[goal][0].export(messages)
        CHECKS[goal](conversion.request)
        sent = exact(conversion.request)
        for value in opaque_values(messages):
            assert json.dumps(value, ensure_ascii=False) not in sent, (goal, value)
        dropped = [x for x in conversion.left_out if x.what == "reasoning"]
        assert len(dropped) == reasoning, goal
