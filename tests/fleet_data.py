"""Fleets for the object-storage tests: varied local rollouts, and uploading them as objects."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import fsspec

from ledger import Message, StopKind
from replay.fleet._ship import remote_key
from rollout_files import START, RolloutBuilder, conversation


def varied_fleet(directory: Path) -> list[Path]:
    """Seven rollouts covering what the listing tells apart.

    Small and over 64 KiB, paused, completed, killed after a checkpoint, killed after a
    resume, no stop point, a delegated child, a damaged head.
    """
    out = []

    def b(sid: str, minutes: int, **kw: object) -> RolloutBuilder:
        return RolloutBuilder(
            directory,
            session_id=sid,
            agent_name="coder",
            started_at=START + timedelta(minutes=minutes),
            **kw,  # type: ignore[arg-type]
        )

    out.append(
        b("aa-small", 1).extend(conversation(2, tag="a")).stop(StopKind.PAUSED, "lunch").write()
    )
    out.append(b("bb-large", 2).extend(conversation(400, tag="b")).stop(StopKind.COMPLETED).write())
    out.append(b("cc-killed", 3).extend(conversation(2, tag="c")).checkpoint().write())
    resumed = b("dd-resumed", 4).extend(conversation(300, tag="d")).stop(StopKind.PAUSED)
    out.append(resumed.add(Message(role="user", content="go on")).write())
    out.append(b("ee-open", 5).extend(conversation(1, tag="e")).write())
    out.append(
        b("ff-child", 6, parent_session_id="aa-small", delegation_id="call_a0")
        .extend(conversation(1, tag="f"))
        .stop(StopKind.COMPLETED)
        .write()
    )
    damaged = b("gg-damaged", 7, meta=False).raw(b'{"type":"session_meta", broken\n')
    out.append(damaged.extend(conversation(1, tag="g")).stop(StopKind.FAILED).write())
    return out


def upload(paths: Sequence[Path], url: str) -> list[str]:
    """Put each file at ``url``/``YYYY-MM-DD``/``name`` (the layout ``ship`` writes); the URLs."""
    fs = fsspec.filesystem("s3")
    urls = []
    for p in paths:
        target = f"{url.rstrip('/')}/{remote_key(p.name)}"
        fs.put_file(str(p), target)
        urls.append(target)
    return urls
