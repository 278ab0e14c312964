"""A scripted model for the OpenAI Agents SDK (no network), and the child process of the restart
test: run as a script, it resumes a rollout's session, prints its items and runs one more turn."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary

from replay.integrations.openai_agents import RolloutSession

ENCRYPTED = "gAAAAABo+/x=" * 8


class ScriptedModel(Model):
    """Answers each call with the next list of output items; keeps the inputs it was given."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = list(outputs)
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(
            json.loads(json.dumps(kwargs["input"] if "input" in kwargs else args[1]))
        )
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return json.dumps({"city": city, "temp_c": 18})


def weather_turn(n: int) -> list[list[Any]]:
    """Reasoning with encrypted content and a call, then reasoning and the answer."""
    return [
        [
            ResponseReasoningItem(
                id=f"rs_{n}a",
                type="reasoning",
                summary=[Summary(text="**Weather**\n\nCall the tool.", type="summary_text")],
                encrypted_content=ENCRYPTED,
            ),
            ResponseFunctionToolCall(
                id=f"fc_{n}",
                call_id=f"call_{n}",
                name="get_weather",
                arguments='{"city": "Paris"}',
                type="function_call",
                status="completed",
            ),
        ],
        [
            ResponseReasoningItem(
                id=f"rs_{n}b", type="reasoning", summary=[], encrypted_content=ENCRYPTED[::-1]
            ),
            ResponseOutputMessage(
                id=f"msg_{n}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(text="18 °C", type="output_text", annotations=[])],
            ),
        ],
    ]


async def run_turn(session: RolloutSession, model: ScriptedModel, question: str) -> str:
    """One user turn under the SDK's own Runner, tracing off."""
    agent = Agent(name="weather", instructions="Be brief.", model=model, tools=[get_weather])
    config = RunConfig(tracing_disabled=True)
    result = await Runner.run(agent, question, session=session, run_config=config)
    return str(result.final_output)


async def _child(path: str) -> None:
    session = RolloutSession.open(path)
    items = await session.get_items()
    model = ScriptedModel(weather_turn(2))
    await run_turn(session, model, "And tomorrow?")
    session.close()
    print(json.dumps({"items": items, "first_input": model.inputs[0]}, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1]))
