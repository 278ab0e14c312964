"""Faults of object storage: objects lost, replaced or truncated mid-operation, a refused
credential, hostile keys. Each gives one clear error or a flagged entry, and deletes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import pytest
from click.testing import CliRunner, Result

import replay
from fleet_data import upload, varied_fleet
from ledger import StopKind
from replay.fleet import StoreError, build_index, list_fleet
from replay.fleet import _listing as listing_module
from replay.fleet._objects import open_object
from replay.fleet.testing import LocalS3
from replay.sessions import SessionFlag
from rollout_files import RolloutBuilder, conversation


def run(*args: str) -> Result:
    """The command in process."""
    return CliRunner().invoke(cli_module(), list(args), prog_name="rollout")


def cli_module() -> Any:
    from replay.cli import cli

    return cli


@pytest.fixture
def fleet(tmp_path: Path, bucket: str) -> tuple[list[Path], str]:
    """The varied fleet as local files and as objects under ``bucket``/f."""
    paths = varied_fleet(tmp_path / "local")
    url = f"{bucket}/f"
    upload(paths, url)
    return paths, url


def during_listing(monkeypatch: pytest.MonkeyPatch, act: Any) -> None:
    """Run ``act`` after the store listed the objects, before their heads and tails are read."""
    real = listing_module.scan_root

    def scan(store: Any) -> Any:
        found = real(store)
        act()
        return found

    monkeypatch.setattr(listing_module, "scan_root", scan)


@pytest.mark.parametrize("name", ["aa-small", "bb-large"])
def test_an_object_deleted_during_a_listing_is_flagged_not_fatal(
    fleet: tuple[list[Path], str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The vanished object is listed as unreadable with the store's reason; the rest are whole."""
    paths, url = fleet
    path = next(p for p in paths if name in p.name)
    key = f"{url}/2026-12-02/{path.name}"
    during_listing(monkeypatch, lambda: fsspec.filesystem("s3").rm_file(key))
    entries = list_fleet(url, use_index=False).entries
    [gone] = [e for e in entries if e.path.name == path.name]
    assert SessionFlag.UNREADABLE in gone.flags
    assert "not found" in gone.notes[0]
    assert not gone.eligibility.replayable
    assert sum(SessionFlag.UNREADABLE in e.flags for e in entries) == 1


@pytest.mark.parametrize("name", ["aa-small", "bb-large"])
def test_an_object_replaced_during_a_listing_is_flagged_never_mixed(
    fleet: tuple[list[Path], str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """An object that grew between the store's listing and the reads is flagged as changed."""
    paths, url = fleet
    path = next(p for p in paths if name in p.name)
    key = f"{url}/2026-12-02/{path.name}"
    during_listing(
        monkeypatch, lambda: fsspec.filesystem("s3").pipe_file(key, path.read_bytes() * 2)
    )
    [changed] = [e for e in list_fleet(url, use_index=False).entries if e.path.name == path.name]
    assert SessionFlag.UNREADABLE in changed.flags
    assert "changed while it was listed" in changed.notes[0]


def test_an_object_replaced_while_it_is_read_is_an_error(bucket: str, tmp_path: Path) -> None:
    """Reading on after the object was replaced raises: the ETag no longer matches."""
    b = RolloutBuilder(tmp_path, session_id="rep-1").extend(conversation(50))
    [url] = upload([b.stop(StopKind.PAUSED).write()], bucket)
    with open_object(url, block_size=1024) as f:
        f.read(100)
        fsspec.filesystem("s3").pipe_file(url, b"something else\n" * 1000)
        with pytest.raises(StoreError, match="replaced while reading"):
            f.read()


def test_a_truncated_object_fails_verification_and_lists_without_a_stop(
    bucket: str, tmp_path: Path
) -> None:
    """A torn last line: replay reports it, verify fails, the listing says killed or unknown."""
    path = RolloutBuilder(tmp_path, session_id="torn-1").extend(conversation(3)).write()
    data = (
        RolloutBuilder(tmp_path, session_id="torn-1")
        .extend(conversation(3))
        .stop(StopKind.PAUSED)
        .data()
    )
    path.write_bytes(data[:-7])
    [url] = upload([path], bucket)
    rep = replay.read_replay(url)
    assert "torn_tail" in {str(d.kind) for d in rep.degraded}
    result = run("verify", url)
    assert result.exit_code == 1
    assert "FAILED" in result.output
    [entry] = replay.list_sessions(bucket)
    assert entry.stop.damaged_lines == 1
    assert entry.stop.killed


def test_a_refused_credential_is_one_clear_error_everywhere(
    fleet: tuple[list[Path], str], s3_env: LocalS3
) -> None:
    """ls, show, verify --all, index and sql: one line naming the credential; nothing written."""
    _, url = fleet
    fs = fsspec.filesystem("s3")
    before = sorted(fs.find(url.removeprefix("s3://")))
    s3_env.set_auth(enforced=True)
    try:
        results = [
            run("ls", "--root", url),
            run("show", f"{url}/2026-12-02/x.jsonl"),
            run("verify", "--all", "--scheduler", "none", "--root", url),
            run("index", url, "--scheduler", "none"),
            run("sql", "--root", url, "SELECT 1"),
        ]
    finally:
        s3_env.set_auth(enforced=False)
    for r in results:
        assert r.exit_code == 1, r.output
        assert r.output.count("\n") == 1, r.output
        assert r.output.startswith("rollout: error: s3://"), r.output
        assert "access denied" in r.output
        assert "Traceback" not in r.output
    assert sorted(fs.find(url.removeprefix("s3://"))) == before


HOSTILE = [
    "2026-12-02/2026-12-02_09-30-00_evil\x1b]52;c;aGk=\x07_coder.jsonl",
    "2026-12-02/../../../escape.jsonl",
    "2026-12-02/./dot.jsonl",
    "2026-12-02//double.jsonl",
    "2026-12-02/%2e%2e/encoded.jsonl",
    "2026-12-02/\u202e\u202ertl.jsonl",
]


def test_hostile_object_keys_are_listed_as_data_and_touch_no_local_file(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control characters, dot segments, empty segments and escapes in keys (written by
    another client): every object is listed, flagged, printed safe, and no local file is made."""
    import boto3

    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    body = RolloutBuilder(tmp_path, session_id="h-1").extend(conversation(1)).stop("paused").data()
    client = boto3.client("s3")
    name = bucket.removeprefix("s3://")
    for key in HOSTILE:
        client.put_object(Bucket=name, Key=key, Body=body)
    entries = replay.list_sessions(bucket)
    assert len(entries) == len(HOSTILE)
    for e in entries:
        assert SessionFlag.NAME_UNPARSEABLE in e.flags or SessionFlag.UNREADABLE in e.flags
        assert e.path.startswith(bucket + "/")
    assert sum(e.session_id == "h-1" for e in entries) >= 3
    for command in (["ls"], ["verify", "--all", "--scheduler", "none"], ["tree"]):
        shown = run(*command, "--root", bucket)
        assert shown.exit_code in (0, 1), shown.output
        assert not set(shown.output) & {"\x1b", "\x07"}, shown.output
    doc = json.loads(run("ls", "--json", "--root", bucket).output)
    assert len(doc["sessions"]) == len(HOSTILE)
    build_index(bucket)
    listed = list_fleet(bucket)
    assert listed.from_index + listed.read == len(HOSTILE)
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd"]
