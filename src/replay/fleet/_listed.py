"""An index row's listing entry, as the listing's rules gave it when the row was written.

Rebuilding an entry from a row's head and stop records runs the listing's rules again for
every object (three record decodes, the implied name, the eligibility): most of the time of a
listing from the index. The row therefore also keeps the entry itself, every field but its
location and size, as one JSON text (``listing``), tagged with the coding it was written in
(``listing_coding``). A listing decodes it in one call per row (ADR 0159).

JSON, not MessagePack: the records' verbatim ``extra`` fields are JSON (``msgspec.Raw``) and
an offset such as ``+02:00`` on a time must come back as written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, TypeAlias

import msgspec

from ledger.naming import RolloutName
from ledger.records import SessionMeta
from replay.eligibility import Eligibility
from replay.session_entry import SessionEntry, SessionFlag
from replay.stop import StopFacts

__all__ = ["LISTING_CODING", "LISTING_ERRORS", "Listed", "decode_listing", "listing_text"]

LISTING_CODING: Final = "entry-1"
"""The coding of the ``listing`` column. Bump it whenever :class:`SessionEntry`, a type it
holds, or a rule of the listing changes what an entry is: rows of another coding are read
from their head and stop columns, and ``rollout index`` writes them again. The test of
``tests/data/index-listing.json`` fails, naming this constant, when that is forgotten."""

Listed: TypeAlias = tuple[
    str,
    int,
    str,
    RolloutName | None,
    str | None,
    str | None,
    datetime | None,
    str | None,
    str | None,
    SessionMeta | None,
    StopFacts,
    Eligibility,
    tuple[SessionFlag, ...],
    tuple[str, ...],
]
"""The row's ``path``, ``size`` and ``version`` (copies of its columns, so that the listing
fetches one value per row), then the entry's fields in order from ``name`` on, without its
``path`` (the URL the store gives the row's object when it is listed) and ``size``."""

_encoder = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(Listed)


def listing_text(path: str, size: int, version: str, entry: SessionEntry) -> str:
    """The ``listing`` column of the row of the object at ``path``, listed as ``entry``."""
    return _encoder.encode(
        (
            path,
            size,
            version,
            entry.name,
            entry.session_id,
            entry.agent_name,
            entry.started_at,
            entry.parent_session_id,
            entry.delegation_id,
            entry.meta,
            entry.stop,
            entry.eligibility,
            entry.flags,
            entry.notes,
        )
    ).decode()


decode_listing: Final = _decoder.decode
"""The entry's fields a ``listing`` text holds; raises one of :data:`LISTING_ERRORS` when it is
not one (a damaged or foreign index: the row is then read from its other columns)."""

LISTING_ERRORS: Final = (msgspec.MsgspecError, ValueError, TypeError, RecursionError)
"""What :func:`decode_listing` raises for a text that is not a listing (``None`` included).

``RecursionError`` too: the decoder recurses into a verbatim ``extra`` as deep as its JSON
nests, within what is left of the interpreter's recursion limit (as for the records)."""
