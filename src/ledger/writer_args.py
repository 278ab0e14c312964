"""What callers hand the writer, checked and turned into what the records hold.

Metadata for ``session_meta``, stop kinds, error details (an exception becomes an
:class:`~ledger.records.ErrorDetail`), the stop kind and reason of leaving a ``with`` block
(ADRs 0023 and 0053), and the messages of a compaction.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from ledger.messages import Message, raw_json
from ledger.records import ErrorDetail, StopKind

__all__ = [
    "clean_exit",
    "error_detail",
    "exit_kind",
    "exit_reason",
    "messages_arg",
    "split_meta",
    "stop_kind",
]

_META_STR_KEYS: Final = ("model", "provider", "cwd", "project")


def messages_arg(messages: Iterable[Message], where: str) -> tuple[Message, ...]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise TypeError(
            f"{where} takes an iterable of ledger.Message, not {type(messages).__name__}"
        )
    kept = tuple(messages)
    for i, m in enumerate(kept):
        if type(m) is not Message:
            raise TypeError(f"{where} takes ledger.Message values; item {i} is {type(m).__name__}")
    return kept


def split_meta(meta: Mapping[str, Any] | None) -> tuple[dict[str, str], Any]:
    if meta is None:
        return {}, msgspec.UNSET
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a mapping, not {type(meta).__name__}")
    fields: dict[str, str] = {}
    rest: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str):
            raise TypeError(f"meta keys must be str, not {type(key).__name__} ({key!r})")
        if key in _META_STR_KEYS:
            if not isinstance(value, str):
                raise TypeError(f"meta[{key!r}] must be a str, not {type(value).__name__}")
            fields[key] = value
        else:
            rest[key] = value
    if not rest:
        return fields, msgspec.UNSET
    try:
        return fields, raw_json(rest)
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise TypeError(f"meta values other than {_META_STR_KEYS} must be JSON: {exc}") from None


def stop_kind(kind: object) -> StopKind:
    if isinstance(kind, StopKind):
        return kind
    if isinstance(kind, str):
        try:
            return StopKind(kind)
        except ValueError:
            pass
    known = ", ".join(f"StopKind.{k.name}" for k in StopKind)
    raise ValueError(f"stop kind {kind!r} is not a StopKind; use one of {known}")


def error_detail(error: ErrorDetail | BaseException | None) -> ErrorDetail | None:
    if error is None or isinstance(error, ErrorDetail):
        return error
    if isinstance(error, BaseException):
        return ErrorDetail(
            type=type(error).__qualname__,
            message=safe_str(error),
            traceback=safe_text("".join(traceback.format_exception(error))) or None,
        )
    raise TypeError(f"error must be an ErrorDetail or an exception, not {type(error).__name__}")


def safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not lose the stop point
        return f"<{type(exc).__qualname__}: its message could not be read>"
    return safe_text(text)


def safe_text(text: str) -> str:
    # Lone surrogates cannot be written as UTF-8; keep them visible as escapes.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_exit(exc: BaseException) -> bool:
    """``sys.exit(0)`` (or ``sys.exit()``) and a generator closing: not a failure of the session."""
    if isinstance(exc, SystemExit):
        return exc.code is None or exc.code == 0
    return isinstance(exc, GeneratorExit)


def exit_kind(exc: BaseException) -> StopKind:
    if isinstance(exc, asyncio.CancelledError):
        return StopKind.CANCELLED
    if isinstance(exc, KeyboardInterrupt):
        return StopKind.INTERRUPTED
    return StopKind.ERROR


def exit_reason(exc: BaseException) -> str:
    name = type(exc).__qualname__
    if isinstance(exc, SystemExit):
        return f"left the writer's block by sys.exit({exc.code!r})"
    text = safe_str(exc)
    return (
        f"left the writer's block by {name}: {text}"
        if text
        else f"left the writer's block by {name}"
    )
