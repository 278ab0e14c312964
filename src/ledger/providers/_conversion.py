"""What a conversion to a provider's shape left out, and where reasoning may be sent back.

A plain ``from_ledger`` returns the request; ``export`` returns a :class:`Conversion`, the
request together with every piece that could not go to the target (ADR 0102). Nothing is left
out silently: ``from_ledger`` warns with :class:`LeftOutWarning` when ``export`` would list
something.
"""

from __future__ import annotations

import warnings
from typing import Any

import attrs

from ledger.messages import Origin

__all__ = [
    "Conversion",
    "LeftOut",
    "LeftOutWarning",
    "Target",
    "warn_left_out",
]


class LeftOutWarning(UserWarning):
    """A conversion to a provider's shape left something out (see ``export`` for the list)."""


@attrs.frozen
class LeftOut:
    """One piece of the conversation a conversion did not send.

    ``index`` is the position of the ledger message it belonged to, ``what`` names the piece
    (``"reasoning"``, ``"signature"``, ``"content part"``, ...), ``reason`` says why.
    """

    index: int
    what: str
    reason: str


@attrs.frozen
class Conversion:
    """A request fragment ready to send, and what the conversion left out of it."""

    request: dict[str, Any]
    left_out: tuple[LeftOut, ...] = ()

    @property
    def count(self) -> int:
        """How many pieces were left out."""
        return len(self.left_out)


@attrs.frozen
class Target:
    """Where a request goes: provider and API always; model and endpoint when known.

    ``binds_model`` and ``binds_endpoint`` say which parts of an origin the provider checks
    its signatures or encrypted payloads against (ADR 0102).
    """

    provider: str
    api: str
    model: str | None = None
    endpoint: str | None = None
    binds_model: bool = True
    binds_endpoint: bool = False

    def accepts(self, origin: Origin | None) -> bool:
        """Whether opaque reasoning from ``origin`` may be sent here.

        Provider and API must match; model and endpoint must match where the provider binds
        them and both sides name one (an origin recorded without a model cannot be told apart).
        """
        if origin is None or origin.provider != self.provider or origin.api != self.api:
            return False
        if (
            self.binds_model
            and None not in (origin.model, self.model)
            and origin.model != self.model
        ):
            return False
        return not (
            self.binds_endpoint
            and None not in (origin.endpoint, self.endpoint)
            and origin.endpoint != self.endpoint
        )

    def why_not(self, origin: Origin | None) -> str:
        """The reason :meth:`accepts` refused ``origin``, for a :class:`LeftOut`."""
        if origin is None:
            return "it has no origin, so it cannot be shown to come from the target"
        return f"it came from {self._named(origin)}, not from the target {self._named(self)}"

    def _named(self, where: Origin | Target) -> str:
        # Provider, API and model, and the endpoint where the provider binds payloads to it.
        named = "/".join(p for p in (where.provider, where.api, where.model) if p)
        if self.binds_endpoint and where.endpoint is not None:
            named += f" at {where.endpoint}"
        return named

    def origin(self) -> Origin:
        """The origin this target gives the messages it converts."""
        key = (self.provider, self.api, self.model, self.endpoint)
        # One value per target, made once: an origin is immutable, and every conversion asks.
        # Anything but text is left to the origin's own checks, which refuse it.
        if not all(v is None or type(v) is str for v in key):
            return Origin(provider=key[0], api=key[1], model=key[2], endpoint=key[3])
        found = _origins.get(key)
        if found is None:
            if len(_origins) >= 256:  # endpoints and models named on the fly stay few
                _origins.clear()
            found = _origins[key] = Origin(
                provider=key[0], api=key[1], model=key[2], endpoint=key[3]
            )
        return found


_origins: dict[tuple[str | None, ...], Origin] = {}


def warn_left_out(conversion: Conversion, shape: str) -> dict[str, Any]:
    """The request of ``conversion``, warning when something was left out of it."""
    if conversion.left_out:
        first = conversion.left_out[0]
        warnings.warn(
            f"{shape}.from_ledger left out {conversion.count} piece(s), first message "
            f"{first.index}: {first.what} ({first.reason}); call {shape}.export() for the list",
            LeftOutWarning,
            stacklevel=3,
        )
    return conversion.request
