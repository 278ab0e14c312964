"""Sessions of agent frameworks kept in a rollout; each module needs its framework installed.

- :mod:`replay.integrations.openai_agents`: ``RolloutSession``, the OpenAI Agents SDK
  ``Session`` protocol (extra ``rollout-ledger[openai-agents]``);
- :mod:`replay.integrations.pydantic_ai`: a Pydantic AI message history to and from ledger
  messages (extra ``rollout-ledger[pydantic-ai]``).

Nothing here is imported by ``import replay``.
"""

__all__: list[str] = []
