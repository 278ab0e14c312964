"""`--storage-option KEY=VALUE`: fsspec options for URL roots, given on the command line."""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["parse_storage_option"]


def parse_storage_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as ``(key, value)``: the value as JSON when it parses, else the string.

    ``anon=true`` gives ``True``, ``max_concurrency=8`` gives 8, ``client_kwargs={"region_name":
    "eu-west-1"}`` a dict, and ``endpoint_url=http://127.0.0.1:9000`` the string.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise click.BadParameter(
            f"{text!r} is not KEY=VALUE with KEY an option name (endpoint_url=..., anon=true)",
            param_hint="--storage-option",
        )
    try:
        value: Any = json.loads(raw, parse_constant=_not_json)
    except ValueError:
        value = raw
    return key, value


def _not_json(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON does not have: such a value is the text.
    raise ValueError(f"{name} is not JSON")
