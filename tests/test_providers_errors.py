"""Bad provider payloads: one ProviderError with the JSON path of the fault and what was expected,
raised before anything is written; and ``import ledger`` stays free of the adapters."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger import RolloutWriter
from ledger.importers._plan import checked_raw
from ledger.providers import ProviderError, anthropic, gemini, openai_chat, openai_responses
from ledger.validation_json import MAX_RAW_DEPTH
from ledger.validation_scalars import InvalidFieldError

THINKING = {"type": "thinking", "thinking": "t", "signature": "sig"}


def _anthropic(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": [THINKING, block]},
        ]
    }


@pytest.mark.parametrize(
    ("module", "request_", "message"),
    [
        (
            anthropic,
            _anthropic({**THINKING, "signature": 12}),
            "messages[3].content[1].signature: expected a string, got an integer",
        ),
        (
            anthropic,
            _anthropic({"type": "tool_use", "id": "t", "name": "n"}),
            "messages[3].content[1].input: expected a value (a required key)",
        ),
        (
            anthropic,
            {"messages": [{"role": "robot", "content": "x"}]},
            "messages[0].role: expected a documented value (invalid enum value 'robot')",
        ),
        (anthropic, [], "request: expected an object, got an array"),
        (
            openai_chat,
            {"messages": [{"role": "assistant", "tool_calls": [{"id": 1}]}]},
            "messages[0].tool_calls[0].id: expected a string, got an integer",
        ),
        (
            openai_chat,
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0].image_url.url: expected a value (a required key)",
        ),
        (
            openai_responses,
            {"input": [{"type": "reasoning", "id": "rs_1", "summary": [{"text": None}]}]},
            "input[0].summary[0].text: expected a string, got null",
        ),
        (
            openai_responses,
            {
                "input": [
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": None, "text": ""}]}
                ]
            },
            "input[0].summary[0].type: expected a string, got null",
        ),
        (
            openai_responses,
            {"input": [{"type": "function_call", "call_id": "c", "name": "n"}]},
            "input[0].arguments: expected a value (a required key)",
        ),
        (
            gemini,
            {
                "contents": [
                    {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "f"}, "thoughtSignature": 5}],
                    }
                ]
            },
            "contents[0].parts[0].thoughtSignature: expected a string, got an integer",
        ),
        (
            gemini,
            {
                "contents": [
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": "x"}}],
                    }
                ]
            },
            "contents[0].parts[0].functionResponse.response: expected an object, got a string",
        ),
    ],
)
def test_a_malformed_payload_names_the_path_and_what_was_expected(
    module: Any, request_: Any, message: str
) -> None:
    """The error reads `path: expected what`, the path counted from the payload's root."""
    with pytest.raises(ProviderError) as caught:
        module.to_ledger(request_)
    assert str(caught.value) == message
    assert str(caught.value).startswith(caught.value.path + ": expected ")


def test_nothing_is_written_when_the_payload_is_malformed(tmp_path: Path) -> None:
    """The conversion fails as a whole before the first message reaches the writer."""
    bad = _anthropic({**THINKING, "signature": None})

    def record(writer: RolloutWriter) -> None:
        for m in anthropic.to_ledger(bad):
            writer.append(m)

    with RolloutWriter.create(tmp_path) as writer:
        with pytest.raises(ProviderError):
            record(writer)
        assert writer.next_seq == 2  # only session_meta was written


def test_a_value_json_cannot_hold_is_refused_with_its_path() -> None:
    """A NaN or a Python object among unknown fields is refused where it is, not at write time."""
    request = {"messages": [{"role": "user", "content": "x", "x_score": float("nan")}]}
    with pytest.raises(ProviderError, match=r"^messages\[0\]: expected a JSON value"):
        openai_chat.to_ledger(request)


def test_a_value_nested_deeper_than_the_reader_takes_is_refused_with_its_path() -> None:
    """An unknown field nested deeper than the reader takes back is refused where it is: kept
    in ``extra``, it would be written and checkpointed as it is (ADR 0164) and fail at replay."""
    deep: object = 1
    for _ in range(MAX_RAW_DEPTH + 1):
        deep = {"a": deep}
    request = {"messages": [{"role": "user", "content": "x", "x_deep": deep}]}
    with pytest.raises(ProviderError, match=r"^messages\[0\]: expected JSON nested at most"):
        openai_chat.to_ledger(request)
    shallow = {"messages": [{"role": "user", "content": "x", "x_deep": {"a": {"b": 1}}}]}
    assert openai_chat.to_ledger(shallow)[0].extra is not msgspec.UNSET


def test_an_import_refuses_a_value_nested_deeper_than_the_reader_takes() -> None:
    """The importers' verbatim values are checked as the constructors' are."""
    deep: object = 1
    for _ in range(MAX_RAW_DEPTH + 1):
        deep = [deep]
    with pytest.raises(InvalidFieldError, match="nested at most"):
        checked_raw({"x": deep})
    assert bytes(checked_raw({"x": [[1]]})) == b'{"x":[[1]]}'


MODULES = {"openai_chat": openai_chat, "openai_responses": openai_responses}
MODULES |= {"anthropic": anthropic, "gemini": gemini}
REQUESTS = {
    "openai_chat": s.chat_requests(),
    "openai_responses": s.responses_requests(),
    "anthropic": s.anthropic_requests(),
    "gemini": s.gemini_requests(),
}


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here] if here else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*here, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            found += _paths(v, (*here, k))
    return found


@pytest.mark.parametrize("shape", sorted(MODULES))
@given(data=st.data())
def test_any_damaged_payload_is_read_or_refused_with_a_provider_error(
    shape: str, data: st.DataObject
) -> None:
    """A valid request with one value replaced by another kind never raises anything else."""
    request = copy.deepcopy(data.draw(REQUESTS[shape]))
    paths = _paths(request)
    if not paths:
        return
    path = data.draw(st.sampled_from(paths))
    holder = request
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = data.draw(st.none() | st.integers() | st.just([1]) | st.just({"a": 1}))
    try:
        MODULES[shape].to_ledger(request)
    except ProviderError as exc:
        failure: ProviderError | None = exc
    else:
        failure = None
    if failure is not None:
        assert failure.path
        assert failure.expected


def test_import_ledger_loads_neither_the_adapters_nor_cattrs() -> None:
    """The adapters and their checks load only when imported: `import ledger` stays light."""
    code = (
        "import sys, ledger\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('ledger.providers', 'cattrs')))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- payloads close to the documented shapes (an outside pass) ---------------------------------


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("module", "request_"),
    [
        (openai_chat, {"messages": [{"role": "assistant", "content": "x", "tool_calls": None}]}),
        (openai_chat, {"messages": [{"role": "assistant", "content": "x", "tool_calls": []}]}),
        (
            openai_chat,
            {"messages": [{"role": "tool", "tool_call_id": "c", "name": "f", "content": "r"}]},
        ),
        (openai_chat, {"messages": [{"role": "user", "content": "x", "reasoning_content": "r"}]}),
        (
            openai_responses,
            {
                "input": [
                    {
                        "type": "reasoning",
                        "id": "rs_1",
                        "summary": [{"type": "summary_text", "text": "s", "lang": "en"}],
                    }
                ]
            },
        ),
        (
            openai_responses,
            {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
        ),
        (
            openai_responses,
            {
                "input": [
                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
                    | {"input": "x"}
                ]
            },
        ),
        (
            anthropic,
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t", "name": "n", "input": _nest(600)}
                        ],
                    }
                ]
            },
        ),
        (
            gemini,
            {
                "contents": [
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": _nest(600)}}],
                    }
                ]
            },
        ),
    ],
)
def test_near_documented_payloads_convert_and_come_back_exact(module: Any, request_: Any) -> None:
    """Payloads real clients send (the SDK's model_dump nulls, a tool message's name, an unknown
    key in a summary part, deep tool input) convert and come back as they were, never a raw
    RuntimeError or RecursionError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = module.from_ledger(module.to_ledger(json.loads(json.dumps(request_))))
    assert json.dumps(back) == json.dumps(request_)


def test_the_sdk_model_dump_of_a_completion_is_a_response() -> None:
    """A ChatCompletion as the OpenAI SDK's model_dump() writes it (tool_calls null) is read."""
    message = {"content": "Yes.", "refusal": None, "role": "assistant", "tool_calls": None}
    completion = {"id": "c", "model": "gpt-4.1", "choices": [{"index": 0, "message": message}]}
    assert openai_chat.response_to_ledger(completion).text() == "Yes."


def test_a_value_the_ledger_refuses_is_a_provider_error_with_its_path() -> None:
    """A lone surrogate in a signature (json.loads accepts it) is refused at its message's path."""
    request_ = json.loads(
        '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content":'
        ' [{"type": "thinking", "thinking": "", "signature": "\\ud800"}]}]}'
    )
    with pytest.raises(ProviderError, match=r"^messages\[1\]: expected a value the ledger can"):
        anthropic.to_ledger(request_)


def test_nesting_beyond_the_recursion_limit_is_a_provider_error() -> None:
    """Tool input deeper than Python can walk is one ProviderError at its message, not a crash."""
    block = {"type": "tool_use", "id": "t", "name": "n", "input": _nest(3000)}
    with pytest.raises(ProviderError, match=r"^messages\[0\]: expected JSON nested less deeply"):
        anthropic.to_ledger({"messages": [{"role": "assistant", "content": [block]}]})
