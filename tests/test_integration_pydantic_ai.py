"""A Pydantic AI history to ledger messages and back: equal in memory, through a rollout, and
under a real Agent run with a function model (signed thinking resumed from the file)."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import strategies as s
from ledger import Durability, RolloutWriter, StopKind
from replay.integrations.pydantic_ai import (
    from_ledger,
    read_history,
    to_ledger,
    write_history,
)


def dumped(history: list[Any]) -> str:
    """The history's JSON text, as Pydantic AI serialises it."""
    return json.dumps(ModelMessagesTypeAdapter.dump_python(history, mode="json"))


@given(history=s.pydantic_ai_histories())
def test_from_ledger_of_to_ledger_is_the_history(history: list[ModelMessage]) -> None:
    """Every part, signature, provider name, timestamp and usage comes back equal."""
    back = from_ledger(to_ledger(history))
    assert back == history
    assert dumped(back) == dumped(history)


@given(history=s.pydantic_ai_histories())
def test_the_history_survives_a_rollout(history: list[ModelMessage]) -> None:
    """Written, paused and replayed from the file, the history is the same."""
    with tempfile.TemporaryDirectory() as d:
        with RolloutWriter.create(d, durability=Durability.OS) as writer:
            write_history(writer, history)
            writer.stop(StopKind.PAUSED)
        assert dumped(read_history(writer.path)) == dumped(history)


def test_an_agent_resumes_with_its_signed_thinking(tmp_path: Path) -> None:
    """An Agent run recorded, then resumed from the file: the model sees the same signature."""
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            thinking = ThinkingPart(
                "Use the tool.", signature="sig-EqQB", provider_name="anthropic"
            )
            call = ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="toolu_1")
            return ModelResponse(parts=[thinking, call], provider_name="anthropic")
        return ModelResponse(parts=[TextPart("18 °C")], provider_name="anthropic")

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"18 °C in {city}"

    # asyncio.run, not run_sync: run_sync leaves an event loop unclosed in the main thread,
    # which a later asyncio.run drops and the collector then reports in some other test.
    first = asyncio.run(agent.run("Weather in Paris?"))
    with RolloutWriter.create(tmp_path) as writer:
        write_history(writer, first.all_messages())
        writer.stop(StopKind.PAUSED)
    history = read_history(writer.path)
    assert dumped(history) == dumped(first.all_messages())
    asyncio.run(agent.run("And tomorrow?", message_history=history))
    resumed = seen[-1]
    thinking = [p for m in resumed for p in m.parts if isinstance(p, ThinkingPart)]
    assert [t.signature for t in thinking] == ["sig-EqQB"]
    assert thinking[0].provider_name == "anthropic"
