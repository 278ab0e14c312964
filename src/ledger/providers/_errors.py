"""The one error a malformed provider payload raises: where the fault is and what was expected."""

from __future__ import annotations

from ledger.error_copies import CopiedAsRaised

__all__ = ["ProviderError"]


class ProviderError(CopiedAsRaised, ValueError):
    """A provider payload that does not have the provider's documented shape.

    ``path`` is the JSON path of the fault inside the payload (``messages[3].content[1]
    .signature``); ``expected`` says what should have been there.
    """

    def __init__(self, path: str, expected: str) -> None:
        self.path = path
        self.expected = expected
        super().__init__(f"{path}: expected {expected}")
