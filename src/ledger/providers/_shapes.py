"""The provider shapes the adapters read, as ``msgspec.Struct`` mirrors of the documented types.

Only what the adapters rely on is declared: unknown keys pass (they are kept verbatim), so a
provider that adds a field next month is still read. The check runs per object, so the path
of a fault is exact; the adapters then read the original dicts, never these values.
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

__all__ = [
    "AnthropicMessage",
    "AnthropicRequest",
    "ChatFunction",
    "ChatMessage",
    "ChatRequest",
    "ChatToolCall",
    "GeminiContent",
    "GeminiPart",
    "GeminiRequest",
    "Media",
    "ResponsesRequest",
    "Typed",
]

Obj = dict[str, Any]


class Typed(Struct):
    """Any block, part or item: an object with a string ``type``."""

    type: str


class Text(Struct):
    text: str


class Thinking(Struct):
    thinking: str
    signature: str


class Redacted(Struct):
    data: str


class ToolUse(Struct):
    id: str
    name: str
    input: Obj


class ToolResult(Struct):
    tool_use_id: str
    content: str | list[Obj] | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET


class Base64Source(Struct, tag="base64"):
    media_type: str
    data: str


class UrlSource(Struct, tag="url"):
    url: str


class Media(Struct):
    """An Anthropic ``image`` or ``document`` block whose source the ledger can hold."""

    source: Base64Source | UrlSource


class AnthropicMessage(Struct):
    role: Literal["user", "assistant"]
    content: str | list[Obj]


class AnthropicRequest(Struct):
    messages: list[Obj]
    system: str | list[Obj] | UnsetType = UNSET


ANTHROPIC_BLOCKS: dict[str, type[Struct]] = {
    "text": Text,
    "thinking": Thinking,
    "redacted_thinking": Redacted,
    "tool_use": ToolUse,
    "tool_result": ToolResult,
}


class ChatFunction(Struct):
    name: str
    arguments: str


class ChatCustom(Struct):
    name: str
    input: str


class ChatToolCall(Struct):
    id: str
    type: Literal["function", "custom"] = "function"
    function: ChatFunction | UnsetType = UNSET
    custom: ChatCustom | UnsetType = UNSET


class ChatMessage(Struct):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[Obj] | UnsetType | None = UNSET
    name: str | UnsetType = UNSET
    tool_calls: list[Obj] | UnsetType | None = UNSET  # null: the OpenAI SDK's model_dump()
    tool_call_id: str | UnsetType = UNSET
    reasoning_content: str | UnsetType | None = UNSET
    reasoning: str | UnsetType | None = UNSET


class ChatRequest(Struct):
    messages: list[Obj]


class ImageUrl(Struct):
    url: str
    detail: str | UnsetType = UNSET


class ChatImage(Struct):
    image_url: ImageUrl


class Audio(Struct):
    data: str
    format: str


class ChatAudio(Struct):
    input_audio: Audio


CHAT_PARTS: dict[str, type[Struct]] = {
    "text": Text,
    "image_url": ChatImage,
    "input_audio": ChatAudio,
}


class ResponsesRequest(Struct):
    input: str | list[Obj]
    instructions: str | UnsetType = UNSET


class ResponsesMessage(Struct):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[Obj]
    id: str | UnsetType = UNSET


class SummaryText(Struct):
    type: Literal["summary_text"]
    text: str


class ResponsesReasoning(Struct):
    id: str
    summary: list[SummaryText]
    encrypted_content: str | UnsetType | None = UNSET


class FunctionCall(Struct):
    call_id: str
    name: str
    arguments: str
    id: str | UnsetType = UNSET


class CustomCall(Struct):
    call_id: str
    name: str
    input: str
    id: str | UnsetType = UNSET


class FunctionCallOutput(Struct):
    call_id: str
    output: str | list[Obj]
    id: str | UnsetType = UNSET


class InputImage(Struct):
    image_url: str | UnsetType = UNSET
    file_id: str | UnsetType = UNSET


RESPONSES_ITEMS: dict[str, type[Struct]] = {
    "message": ResponsesMessage,
    "reasoning": ResponsesReasoning,
    "function_call": FunctionCall,
    "custom_tool_call": CustomCall,
    "function_call_output": FunctionCallOutput,
    "custom_tool_call_output": FunctionCallOutput,
}

RESPONSES_PARTS: dict[str, type[Struct]] = {
    "input_text": Text,
    "output_text": Text,
    "input_image": InputImage,
}


class GeminiCall(Struct):
    name: str
    args: Obj | UnsetType = UNSET
    id: str | UnsetType = UNSET


class GeminiResponse(Struct):
    name: str
    response: Obj
    id: str | UnsetType = UNSET


class InlineData(Struct):
    mimeType: str  # noqa: N815 - the provider's key
    data: str


class FileData(Struct):
    fileUri: str  # noqa: N815
    mimeType: str | UnsetType = UNSET  # noqa: N815


class GeminiPart(Struct):
    text: str | UnsetType = UNSET
    thought: bool | UnsetType = UNSET
    thoughtSignature: str | UnsetType = UNSET  # noqa: N815
    functionCall: GeminiCall | UnsetType = UNSET  # noqa: N815
    functionResponse: GeminiResponse | UnsetType = UNSET  # noqa: N815
    inlineData: InlineData | UnsetType = UNSET  # noqa: N815
    fileData: FileData | UnsetType = UNSET  # noqa: N815


class GeminiContent(Struct):
    parts: list[Obj]
    role: Literal["user", "model"] | UnsetType = UNSET


class GeminiRequest(Struct):
    contents: list[Obj]
    systemInstruction: Obj | UnsetType = UNSET  # noqa: N815
