"""Real-shaped payloads of each provider (tests/data/providers): written to a rollout, replayed,
and sent back byte for byte; the reply appended through response_to_ledger goes back as the
provider expects it; the typed homes hold what they should."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger import Message, ReasoningKind, RolloutWriter, StopKind
from ledger.providers import anthropic, gemini, openai_chat, openai_responses
from replay import read_replay

DATA = Path(__file__).with_name("data") / "providers"
MODULES: dict[str, Any] = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
}


def _text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _replayed(tmp_path: Path, messages: list[Message]) -> tuple[Message, ...]:
    with RolloutWriter.create(tmp_path) as writer:
        for m in messages:
            writer.append(m)
        writer.stop(StopKind.PAUSED)
    replay = read_replay(writer.path)
    assert replay.verified
    return replay.messages


def _sent_reply(shape: str, response: dict[str, Any]) -> list[dict[str, Any]]:
    """What the provider documents as the way to send its reply back in the next request."""
    if shape == "anthropic":
        return [{"role": "assistant", "content": response["content"]}]
    if shape == "openai_chat":
        return [response["choices"][0]["message"]]
    if shape == "openai_responses":
        return list(response["output"])
    return [response["candidates"][0]["content"]]


@pytest.mark.parametrize("shape", sorted(MODULES))
def test_a_real_request_is_sent_back_byte_for_byte(shape: str, tmp_path: Path) -> None:
    """The request file's bytes come back after a rollout, and so does the appended reply."""
    module = MODULES[shape]
    raw = (DATA / f"{shape}_request.json").read_text(encoding="utf-8")
    response = json.loads((DATA / f"{shape}_response.json").read_text(encoding="utf-8"))
    request = json.loads(raw)
    reply = module.response_to_ledger(response)
    messages = _replayed(tmp_path, [*module.to_ledger(request), reply])
    conversion = module.export(messages[:-1])
    assert conversion.left_out == ()
    assert _text(conversion.request) == raw
    key = {"anthropic": "messages", "openai_chat": "messages", "gemini": "contents"}
    sent = module.from_ledger(messages)[key.get(shape, "input")]
    tail = sent[-len(_sent_reply(shape, response)) :]
    assert json.dumps(tail) == json.dumps(_sent_reply(shape, response))


def test_the_typed_homes_hold_signatures_ids_and_arguments() -> None:
    """Signatures, encrypted reasoning, ids and argument text sit in their typed fields."""
    load = lambda shape: json.loads((DATA / f"{shape}_request.json").read_text("utf-8"))  # noqa: E731
    a = anthropic.to_ledger(load("anthropic"))
    assert [r.kind for r in a[2].reasoning] == [ReasoningKind.THINKING, ReasoningKind.REDACTED]
    assert a[2].reasoning[0].signature is not None
    assert a[2].reasoning[0].signature.startswith("EuYB")
    assert a[2].tool_calls[0].id == "toolu_01A09q90qw90lq917835lq9"
    assert a[5].reasoning[0].text == ""
    c = openai_chat.to_ledger(load("openai_chat"))
    assert c[2].tool_calls[1].arguments == '{"timezone": "Europe/Paris"'  # not valid JSON
    assert c[2].content is None
    r = openai_responses.to_ledger(load("openai_responses"))
    turn = r[2]
    assert [x.item_id for x in turn.reasoning] == ["rs_68a4b2c1d2e3f4a5b6c7d8e9f0a1b2c3"]
    assert len(turn.reasoning[0].summary) == 2
    assert turn.reasoning[0].encrypted is not None
    assert turn.tool_calls[0].id == "call_9yLSPE5O5Tb1WPLwjSgoCs4l"
    assert turn.tool_calls[0].item_id == "fc_68a4b2c5e6f7a8b9c0d1e2f3a4b5c6d7"
    assert r[5].item_id == "msg_68a4b2d3f4e5d6c7b8a9f0e1d2c3b4a5"
    g = gemini.to_ledger(load("gemini"))
    first, second = g[2].tool_calls
    assert first.signature is not None
    assert second.signature is None
    assert [t.tool_call_id for t in g[3:5]] == [first.id, second.id]
    assert g[5].content[0].signature is not None  # type: ignore[index,union-attr]
