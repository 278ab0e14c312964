"""Rollouts the listing tells apart beyond the varied fleet, and comparing two listings exactly.

Each file is written byte by byte where a writer of this library would refuse it (times with
an offset, damaged or foreign heads, names that are not a rollout's), as another tool or a
damaged disk leaves them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from fleet_data import varied_fleet
from ledger import Message, StopKind, rollout_filename
from replay.sessions import SessionEntry
from rollout_files import START, RolloutBuilder, conversation

_T = "2026-12-02T09:30:00Z"
_DIGEST = "sha256:" + "ab" * 32


def _meta(sid: str, *, started: str = _T, more: str = "") -> bytes:
    return (
        '{"type":"session_meta","seq":1,"ts":"' + _T + '","format_version":2,'
        f'"session_id":{_json(sid)},"started_at":"{started}"{more}}}\n'
    ).encode()


def _json(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)


def _terminal(seq: int, kind: str | None, reason: str = "", ts: str = _T) -> bytes:
    stop = "" if kind is None else f',"stop_kind":"{kind}"'
    return (
        f'{{"type":"terminal","seq":{seq},"ts":"{ts}","event":"stop"{stop},"reason":"{reason}"}}\n'
    ).encode()


def odd_fleet(directory: Path, *, big: bool = False) -> list[Path]:
    """The varied fleet and some thirty more files, one for each thing the listing tells apart.

    ``big`` adds two heads near the 4 MiB limit (one just under it with its newline, one
    over it without).
    """
    out = varied_fleet(directory)
    misc = directory / "misc"
    misc.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes) -> None:
        path = misc / name
        path.write_bytes(data)
        out.append(path)

    fork = (
        ',"fork":{"session_id":"aa-small","seq":3,"digest":"' + _DIGEST + '","message_count":2,'
        '"path":"../2026-12-02_09-31-00_aa-small_coder.jsonl"}'
    )
    extra = ',"extra":{"k":[1,"\u00e9"],  "nested": {"a": null}}'
    put(
        rollout_filename(START, "fk"),
        _meta("fk", started="2026-12-02T15:00:00+05:30", more=fork + extra)
        + _terminal(2, "weird-kind", "r"),
    )
    put(
        rollout_filename(START, "fc"),
        _meta("fc", more=fork.replace('"path"', '"copied":true,"path"')),
    )
    put(rollout_filename(START, "s\u00e9/\u00df\u2603", "coder"), _meta("s\u00e9/\u00df\u2603"))
    put(
        rollout_filename(START, "s\u00e9/\u00df\u2603", "coder").replace(".jsonl", "2.jsonl"),
        _meta("s\u00e9", more=',"agent_name":"\u00e1gent"'),
    )
    put("2026-12-02_09-30-00_x_\u00e1gent.jsonl", _meta("x", more=',"agent_name":"\u00e1gent"'))
    long_id = "L" * 128
    put(rollout_filename(START, long_id), _meta(long_id))
    put(rollout_filename(START, long_id, "ag"), _meta("other", more=',"agent_name":"ag"'))
    put(
        rollout_filename(START, "c1"),
        _meta("c1", more=',"parent_session_id":"","delegation_id":""'),
    )
    put(rollout_filename(START, "c2"), _meta("c2", more=',"parent_session_id":"nope"'))
    put(rollout_filename(START, "c3"), _meta("c3", more=',"delegation_id":"d"'))
    put(
        rollout_filename(START, "c4"),
        _meta("c4", more=',"parent_session_id":"aa-small","delegation_id":"call_z"'),
    )
    put("2026-12-02_09-30-00_empty.jsonl", b"")
    put("2026-12-02_09-30-00_blank.jsonl", b"\n\n")
    put("2026-12-02_09-30-00_bom.jsonl", b"\xef\xbb\xbf" + _meta("bom"))
    put("2026-12-02_09-30-00_badutf.jsonl", _meta("bad\u00ff").replace(b"\xc3\xbf", b"\xff"))
    put("2026-12-02_09-30-00_nonl.jsonl", _meta("nonl")[:-1])
    put("2026-12-02_09-30-00_future.jsonl", b'{"type":"future_thing","seq":1}\n')
    put("2026-12-02_09-30-00_unkfield.jsonl", _meta("unkfield", more=',"zzz":[1]'))
    put("2026-12-02_09-30-00_cpfirst.jsonl", _terminal(1, "paused"))
    put("notes.jsonl", _meta("notes"))
    put("2026-12-02_09-30-00_dup.jsonl", _meta("aa-small"))
    put("2026-12-02-09-30-00_s9.jsonl", _meta("s9"))
    put(
        rollout_filename(START, "frac"),
        _meta("frac", started="2026-12-02T06:00:00.1234567-03:30"),
    )
    put(
        rollout_filename(START, "twice"),
        _meta("twice") + _terminal(2, "paused", "one") + _terminal(3, "completed", "two"),
    )
    put(rollout_filename(START, "legacy"), _meta("legacy") + _terminal(2, None, "no kind"))
    resumed = RolloutBuilder(directory / "more", session_id="kr", started_at=START)
    resumed.extend(conversation(2)).stop(StopKind.PAUSED, "p")
    resumed.add(Message(role="user", content="again")).extend(conversation(1))
    out.append(resumed.stop(StopKind.FAILED, "boom").write())
    killed = RolloutBuilder(directory / "more", session_id="kr2", started_at=START)
    killed.extend(conversation(2)).stop(StopKind.PAUSED, "p")
    out.append(killed.add(Message(role="user", content="again")).checkpoint().write())
    if big:
        limit = 4 * 1024 * 1024
        pad = _meta("big", more=',"extra":{"pad":""}')
        fill = b"p" * (limit - len(pad) - 1)
        put(rollout_filename(START, "big"), pad.replace(b'"pad":""', b'"pad":"' + fill + b'"'))
        put("2026-12-02_09-30-00_huge.jsonl", b'{"type":"session_meta","x":"' + b"a" * limit)
    return out


def exact(entries: Sequence[SessionEntry]) -> list[tuple[str, str | None]]:
    """Each entry's ``repr`` (without object addresses) and the digest of its head's verbatim
    ``extra``: what equality alone does not see (a time's offset, the bytes of ``extra``)."""
    out = []
    for e in entries:
        extra = e.meta.extra if e.meta is not None else None
        raw = memoryview(extra) if isinstance(extra, msgspec.Raw) else None
        digest = None if raw is None else hashlib.sha256(raw).hexdigest()
        out.append((re.sub(r" at 0x[0-9a-f]+", "", repr(e)), digest))
    return out
