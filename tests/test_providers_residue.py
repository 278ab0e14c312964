"""The residue of one object against its rebuild: diff and apply are duals, key order kept, and
a typed value the rebuild got wrong is refused rather than copied."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies as s
from ledger.providers.residue import apply, diff

objects = st.dictionaries(s.pident, s.small_json, max_size=5)


@given(original=objects, built=objects)
def test_apply_of_diff_gives_the_original_back_key_order_included(
    original: dict[str, object], built: dict[str, object]
) -> None:
    """apply(built, diff(original, built)) is the original as JSON text, for any two objects."""
    restored = apply(built, diff(original, built))
    assert json.dumps(restored) == json.dumps(original)


@given(original=objects)
def test_an_object_against_itself_has_no_residue(original: dict[str, object]) -> None:
    """Nothing is stored when the rebuild is already the original."""
    assert diff(original, dict(original)) == {}


def test_unknown_keys_keep_their_place_and_order() -> None:
    """Keys the rebuild lacks come back where they were, not sorted and not at the end."""
    original = {"z_last": 1, "type": "text", "a_first": [2], "text": "hi"}
    residue = diff(original, {"type": "text", "text": "hi"})
    assert list(apply({"type": "text", "text": "hi"}, residue)) == list(original)


def test_a_typed_value_the_rebuild_lost_is_refused() -> None:
    """A signature the rebuild dropped is an adapter bug, not a verbatim field."""
    with pytest.raises(RuntimeError, match="signature"):
        diff({"signature": "sig"}, {}, typed=("signature",))
    with pytest.raises(RuntimeError, match="arguments"):
        diff(
            {"function": {"arguments": "{"}},
            {"function": {"arguments": ""}},
            typed=("function.arguments",),
        )
    assert diff({"signature": None}, {}, typed=("signature",)) == {"x": {"signature": None}}
