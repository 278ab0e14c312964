"""Provider adapters: each provider's conversation shape to ledger messages and back.

One module per shape, each with ``to_ledger(request)``, ``from_ledger(messages)``,
``export(messages)`` (the request and what was left out) and ``response_to_ledger(response)``:
:mod:`~ledger.providers.openai_chat`, :mod:`~ledger.providers.openai_responses`,
:mod:`~ledger.providers.anthropic`, :mod:`~ledger.providers.gemini`. ``import ledger`` does not
load this package.
"""

from ledger.providers._conversion import Conversion, LeftOut, LeftOutWarning, Target
from ledger.providers._errors import ProviderError

__all__ = ["Conversion", "LeftOut", "LeftOutWarning", "ProviderError", "Target"]
