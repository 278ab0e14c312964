"""Reasoning goes back only where it came from (provider, API, and model or endpoint where the
provider binds it); what a conversion leaves out is counted, and a plain call warns about it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger.providers import LeftOutWarning, anthropic, gemini, openai_chat, openai_responses
from ledger.providers._signed import unsigned
from ledger.providers.gemini import SKIP_SIGNATURE

DATA = Path(__file__).with_name("data") / "providers"


def load(shape: str) -> dict[str, Any]:
    """A committed real-shaped request."""
    return json.loads((DATA / f"{shape}_request.json").read_text(encoding="utf-8"))


def test_anthropic_thinking_goes_back_only_to_the_model_that_wrote_it() -> None:
    """Signed thinking recorded from one model is not sent to another model; it is counted."""
    messages = anthropic.to_ledger(load("anthropic"), model="claude-sonnet-4-6")
    same = anthropic.export(messages, model="claude-sonnet-4-6")
    assert same.left_out == ()
    other = anthropic.export(messages, model="claude-opus-4-7")
    sent = json.dumps(other.request)
    assert '"thinking"' not in sent
    assert '"redacted_thinking"' not in sent
    assert [x.what for x in other.left_out] == ["reasoning"] * 3
    assert "claude-sonnet-4-6" in other.left_out[0].reason


def test_responses_reasoning_goes_back_only_to_its_endpoint_and_takes_the_ids_along() -> None:
    """Encrypted reasoning from another endpoint is left out, and so are the fc_/msg_ ids."""
    messages = openai_responses.to_ledger(load("openai_responses"), endpoint="https://a.test")
    other = openai_responses.export(messages, endpoint="https://b.test")
    items = other.request["input"]
    assert not [i for i in items if i.get("type") == "reasoning"]
    assert not [i for i in items if str(i.get("id", "")).startswith(("fc_", "msg_"))]
    assert {x.what for x in other.left_out} == {"reasoning", "item ids"}
    same = openai_responses.export(messages, endpoint="https://a.test")
    assert same.left_out == ()


def test_chat_reasoning_content_goes_back_only_to_its_provider() -> None:
    """DeepSeek's reasoning_content is sent back to DeepSeek, not to another Chat server."""
    request = {
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "", "reasoning_content": "Call it."},
        ]
    }
    messages = openai_chat.to_ledger(request, provider="deepseek")
    assert openai_chat.from_ledger(messages, provider="deepseek") == request
    other = openai_chat.export(messages, provider="openai")
    assert "reasoning_content" not in other.request["messages"][1]
    assert other.count == 1


def test_gemini_gets_the_documented_placeholder_for_history_it_did_not_write() -> None:
    """Calls from another provider get `skip_thought_signature_validator` on the first call."""
    messages = anthropic.to_ledger(load("anthropic"))
    request = gemini.export(messages).request
    model = [c for c in request["contents"] if c["role"] == "model"]
    calls = [p for p in model[0]["parts"] if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == SKIP_SIGNATURE
    assert "thoughtSignature" not in calls[1]


def test_gemini_signatures_stay_on_their_parts_for_the_same_model() -> None:
    """A thought signature returns on the exact part it came with, for the same model."""
    request = load("gemini")
    messages = gemini.to_ledger(request, model="gemini-3-pro-preview")
    assert gemini.from_ledger(messages, model="gemini-3-pro-preview") == request
    other = gemini.export(messages, model="gemini-2.5-flash")
    signatures = [p.get("thoughtSignature") for c in other.request["contents"] for p in c["parts"]]
    assert [s for s in signatures if s] == [SKIP_SIGNATURE]
    assert {x.what for x in other.left_out} == {"reasoning", "signature"}


def test_a_plain_call_warns_when_something_is_left_out() -> None:
    """from_ledger returns the request and warns with the count; export lists every piece."""
    messages = anthropic.to_ledger(load("anthropic"))
    conversion = openai_chat.export(messages)
    assert {x.what for x in conversion.left_out} == {
        "reasoning",
        "fields kept verbatim from anthropic",
    }
    expected = rf"left out {conversion.count} piece\(s\).*openai_chat\.export\(\)"
    with pytest.warns(LeftOutWarning, match=expected):
        request = openai_chat.from_ledger(messages)
    assert request == conversion.request


def test_a_plain_call_is_silent_when_nothing_is_left_out() -> None:
    """No warning when the conversation goes back where it came from."""
    messages = anthropic.to_ledger(load("anthropic"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert anthropic.from_ledger(messages) == load("anthropic")


def test_another_providers_response_id_is_never_a_responses_item_id() -> None:
    """An Anthropic or Gemini response's own id is left out (and counted) when the message goes
    to OpenAI Responses, never sent as a message item id that OpenAI would look up."""
    a = anthropic.response_to_ledger(
        {"id": "msg_01X", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6"}
        | {"content": [{"type": "text", "text": "Yes."}]}
    )
    g = gemini.response_to_ledger(
        {"responseId": "gemini-response-42", "modelVersion": "gemini-3-pro-preview"}
        | {"candidates": [{"content": {"role": "model", "parts": [{"text": "Yes."}]}}]}
    )
    for m in (a, g):
        conversion = openai_responses.export([m])
        assert "id" not in conversion.request["input"][0]
        assert [x.what for x in conversion.left_out] == ["item ids"]


# --- signed payloads kept opaque or verbatim go back only to their origin too -----------------


def sent_text(conversion: Any) -> str:
    """The request of a conversion as JSON text, to search for a payload."""
    return json.dumps(conversion.request, ensure_ascii=False)


def test_gemini_opaque_parts_lose_their_signature_on_another_model() -> None:
    """A signature-only part is dropped and an ``executableCode`` part loses its signature when
    the model differs; each is counted, with the model it came from as reason."""
    request = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [
                    {"thoughtSignature": "SIG_ONLY_PART"},
                    {
                        "executableCode": {"language": "PYTHON", "code": "1"},
                        "thoughtSignature": "SIG_CODE",
                    },
                ],
            },
        ]
    }
    messages = gemini.to_ledger(request, model="gemini-2.5-pro")
    assert gemini.export(messages, model="gemini-2.5-pro").request == request
    other = gemini.export(messages, model="gemini-3-pro-preview")
    assert other.request["contents"][1]["parts"] == [
        {"executableCode": {"language": "PYTHON", "code": "1"}}
    ]
    assert [x.what for x in other.left_out] == ["signature", "signature"]
    assert all("gemini-2.5-pro" in x.reason for x in other.left_out)


def test_gemini_snake_case_signature_kept_verbatim_is_not_sent_to_another_model() -> None:
    """A ``thought_signature`` spelled in snake case (kept in the residue, not typed) is
    stripped from its text part for another model, and counted."""
    request = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"text": "yo", "thought_signature": "SIG_SNAKE"}]},
        ]
    }
    messages = gemini.to_ledger(request, model="gemini-2.5-pro")
    assert gemini.export(messages, model="gemini-2.5-pro").request == request
    other = gemini.export(messages, model="gemini-3-pro-preview")
    assert other.request["contents"][1]["parts"] == [{"text": "yo"}]
    assert [x.what for x in other.left_out] == ["signature"]


def test_responses_encrypted_items_go_back_only_to_their_endpoint() -> None:
    """A compaction item with encrypted content (kept opaque) is dropped with its id for
    another endpoint and counted, as the encrypted reasoning is; the reason names the
    endpoint."""
    request = {
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC_R"},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC_COMPACTION"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ]
    }
    messages = openai_responses.to_ledger(request, endpoint="https://org-a.test/v1")
    same = openai_responses.export(messages, endpoint="https://org-a.test/v1")
    assert same.request == request
    assert same.left_out == ()
    other = openai_responses.export(messages, endpoint="https://org-b.test/v1")
    sent = sent_text(other)
    assert "ENC_R" not in sent
    assert "ENC_COMPACTION" not in sent
    assert "cmp_1" not in sent
    assert [x.what for x in other.left_out] == ["reasoning", "encrypted item"]
    assert all("https://org-a.test/v1" in x.reason for x in other.left_out)


def test_chat_reasoning_details_go_back_only_to_their_provider() -> None:
    """OpenRouter's ``reasoning_details`` (encrypted reasoning, kept verbatim) are not sent to
    another Chat provider; the field is counted."""
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "yo",
                "reasoning_details": [
                    {
                        "type": "reasoning.encrypted",
                        "data": "ENC_OR",
                        "format": "anthropic-claude-v1",
                    }
                ],
            },
        ]
    }
    messages = openai_chat.to_ledger(request, provider="openrouter")
    same = openai_chat.export(messages, provider="openrouter")
    assert same.request == request
    assert same.left_out == ()
    other = openai_chat.export(messages, provider="openai")
    assert other.request["messages"][1] == {"role": "assistant", "content": "yo"}
    assert [x.what for x in other.left_out] == ["provider field"]
    assert "openrouter" in other.left_out[0].reason


def test_chat_tool_call_signature_in_extra_content_goes_back_only_to_its_provider() -> None:
    """Gemini's OpenAI-compatible ``extra_content.google.thought_signature`` on a tool call is
    stripped for another provider (the call stays) and counted."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
        "extra_content": {"google": {"thought_signature": "SIG_COMPAT"}},
    }
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]
    }
    messages = openai_chat.to_ledger(request, provider="google")
    assert openai_chat.export(messages, provider="google").request == request
    other = openai_chat.export(messages, provider="openai")
    sent_call = other.request["messages"][1]["tool_calls"][0]
    assert sent_call == {"id": "call_1", "type": "function", "function": call["function"]}
    assert [x.what for x in other.left_out] == ["signature"]


def test_tool_arguments_named_like_a_signature_are_user_data() -> None:
    """Only provider objects are searched for signed keys: a tool argument called
    ``signature`` or ``encrypted_content`` goes to another model untouched, uncounted."""
    args = {"signature": "Yours, A.", "encrypted_content": "x", "extra_content": {"signature": 1}}
    request = {
        "contents": [
            {"role": "user", "parts": [{"text": "sign it"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "sign", "args": args}}]},
        ]
    }
    messages = gemini.to_ledger(request, model="gemini-2.5-pro")
    other = gemini.export(messages, model="gemini-3-pro-preview")
    assert other.request["contents"][1]["parts"][0]["functionCall"]["args"] == args
    assert other.left_out == ()


def test_encrypted_types_and_carriers_are_taken_out_whole() -> None:
    """By the table: an object of an encrypted type goes whole; inside a carrier, objects left
    empty go; an object left with labels only goes; the rest stays in its order."""
    assert unsigned({"type": "redacted_thinking", "data": "D"}) == (None, ("encrypted item",))
    assert unsigned({"type": "x", "signature": "S", "encrypted_content": "E"}) == (
        None,
        ("encrypted item",),
    )
    assert unsigned({"thought": True, "thoughtSignature": "S"}) == (None, ("signature",))
    carried = {"a": 1, "extra_content": {"google": {"thought_signature": "S"}, "other": {}}}
    assert unsigned(carried) == ({"a": 1, "extra_content": {"other": {}}}, ("signature",))
    assert unsigned({"b": 2, "a": 1}) == ({"b": 2, "a": 1}, ())


MODULES: dict[str, Any] = {
    "gemini": gemini,
    "openai_responses": openai_responses,
    "openai_chat": openai_chat,
}
SIGNED_WHATS = ("signature", "encrypted item", "provider field")


@pytest.mark.parametrize("shape", sorted(s.SIGNED_ORIGINS))
@given(data=st.data())
def test_signed_payloads_outside_typed_fields_go_back_only_to_their_origin(
    shape: str, data: st.DataObject
) -> None:
    """Signed payloads in opaque parts and items and in verbatim fields come back byte for byte
    to their origin, nothing counted; to another origin of the same shape none is sent, and
    each is counted once."""
    request, tokens, pieces = data.draw(s.signed_requests(shape))
    module = MODULES[shape]
    mine, other = s.SIGNED_ORIGINS[shape]
    messages = module.to_ledger(request, **mine)
    same = module.export(messages, **mine)
    assert json.dumps(same.request) == json.dumps(request)
    assert same.left_out == ()
    conversion = module.export(messages, **other)
    sent = json.dumps(conversion.request, ensure_ascii=False)
    for token in tokens:
        assert json.dumps(token) not in sent
    assert len([x for x in conversion.left_out if x.what in SIGNED_WHATS]) == pieces


def test_anthropic_blocks_kept_opaque_lose_their_signature_on_another_model() -> None:
    """A block of a type no ledger field holds, carrying a signature, goes back to its model
    only; for another model it is dropped when the signature was all it held, and counted."""
    signed = {"type": "future_thinking", "signature": "SIG_FUTURE"}
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [signed, {"type": "text", "text": "yo"}]},
        ]
    }
    messages = anthropic.to_ledger(request, model="claude-sonnet-4-6")
    assert anthropic.export(messages, model="claude-sonnet-4-6").request == request
    other = anthropic.export(messages, model="claude-opus-4-7")
    assert other.request["messages"][1]["content"] == [{"type": "text", "text": "yo"}]
    assert [x.what for x in other.left_out] == ["signature"]
