"""`ship`: create-only, idempotent, --move only after the remote copy verified, safe to kill."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fsspec
import pytest
from click.testing import CliRunner, Result

from fleet_data import varied_fleet
from ledger import Message, RolloutWriter, StopKind
from replay.cli import cli
from replay.fleet import ShipAction, StoreAccessError, ship
from replay.fleet import _ship as ship_module
from replay.fleet.testing import LocalS3
from rollout_files import RolloutBuilder, conversation


def run(*args: str) -> Result:
    """The command in process."""
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


def objects(url: str) -> dict[str, bytes]:
    """Every object under ``url``, by key relative to it."""
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()  # s3fs caches listings; the bucket changed behind its back
    base = url.removeprefix("s3://").rstrip("/")
    return {p[len(base) + 1 :]: fs.cat_file(p) for p in fs.find(base)}


@pytest.fixture
def local(tmp_path: Path) -> Path:
    """A local root holding the varied fleet."""
    root = tmp_path / "root"
    varied_fleet(root)
    return root


def sealed(root: Path) -> dict[str, bytes]:
    """The files under ``root`` that have a stop point, by name."""
    return {p.name: p.read_bytes() for p in root.glob("*.jsonl") if "ee-open" not in p.name}


def test_ship_uploads_sealed_rollouts_under_their_day_and_name(local: Path, bucket: str) -> None:
    """Each sealed file lands at URL/YYYY-MM-DD/<its name>, byte for byte; the open one stays."""
    before = sealed(local)
    report = ship(local, f"{bucket}/fleet")
    assert report.ok
    assert report.count(ShipAction.UPLOADED) == len(before)
    skipped = [i for i in report.items if i.action == ShipAction.SKIPPED]
    assert [i.path.name.split("_")[2] for i in skipped] == ["ee-open"]
    assert "no stop point" in skipped[0].reason
    assert objects(f"{bucket}/fleet") == {f"2026-12-02/{n}": b for n, b in before.items()}
    assert report.bytes_sent == sum(len(b) for b in before.values())
    assert report.bytes_read_back == 0


def test_ship_is_idempotent_and_moves_each_byte_once(
    local: Path, bucket: str, s3_env: LocalS3
) -> None:
    """A second run sends nothing and reads nothing back: the objects are found, same bytes."""
    ship(local, bucket)
    s3_env.reset_counts()
    again = ship(local, bucket)
    assert again.count(ShipAction.PRESENT) == len(sealed(local))
    assert again.bytes_sent == 0
    assert sum(r.body_bytes for r in s3_env.counted() if r.method == "GET") == 0
    assert all(r.method in ("HEAD", "GET") for r in s3_env.counted())


def test_move_deletes_local_copies_only_once_verified(local: Path, bucket: str) -> None:
    """--move leaves only the unsealed file locally, and every moved file is in the bucket."""
    before = sealed(local)
    report = ship(local, bucket, move=True)
    assert report.ok
    assert sorted(p.name for p in local.glob("*.jsonl")) == [
        n for n in sorted(os.listdir(local)) if "ee-open" in n
    ]
    assert objects(bucket) == {f"2026-12-02/{n}": b for n, b in before.items()}


def test_a_ship_killed_between_upload_and_delete_is_finished_by_the_next(
    local: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted after its second upload, before any delete: a rerun loses and doubles nothing."""
    before = sealed(local)
    real = ship_module._delete_local
    calls = 0

    def interrupted(path: Path, fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt  # the process is stopped right here
        real(path, fd)

    monkeypatch.setattr(ship_module, "_delete_local", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ship(local, bucket, move=True)
    monkeypatch.setattr(ship_module, "_delete_local", real)
    assert len(sealed(local)) == len(before) - 1
    report = ship(local, bucket, move=True)
    assert report.ok
    assert report.count(ShipAction.PRESENT) >= 1
    assert sealed(local) == {}
    assert objects(bucket) == {f"2026-12-02/{n}": b for n, b in before.items()}


def test_other_bytes_at_the_key_are_a_conflict_and_nothing_changes(
    local: Path, bucket: str
) -> None:
    """An object with other bytes is never overwritten, and the local file is never deleted."""
    name = next(n for n in sealed(local) if "aa-small" in n)
    fsspec.filesystem("s3").pipe_file(f"{bucket}/2026-12-02/{name}", b"other bytes\n")
    report = ship(local, bucket, move=True)
    assert not report.ok
    [conflict] = [i for i in report.items if i.action == ShipAction.CONFLICT]
    assert conflict.path.name == name
    assert not conflict.moved
    assert (local / name).exists()
    assert objects(bucket)[f"2026-12-02/{name}"] == b"other bytes\n"
    result = run("ship", "--root", str(local), "--to", bucket)
    assert result.exit_code == 1
    assert "CONFLICT" in result.output


def test_dry_run_changes_nothing(local: Path, bucket: str) -> None:
    """--dry-run says what it would upload and writes and deletes nothing."""
    report = ship(local, bucket, move=True, dry_run=True)
    assert report.count(ShipAction.WOULD_UPLOAD) == len(sealed(local))
    assert objects(bucket) == {}
    assert len(sealed(local)) == len(report.items) - 1


def test_unsealed_sessions_ship_only_when_asked(local: Path, bucket: str) -> None:
    """A session without a stop point is skipped unless --include-unsealed is given."""
    result = run("ship", "--json", "--root", str(local), "--to", bucket, "--include-unsealed")
    doc = json.loads(result.output)
    assert result.exit_code == 0, result.output
    assert {i["action"] for i in doc["items"]} == {"uploaded"}
    assert len(objects(bucket)) == len(doc["items"])


def test_a_session_a_writer_holds_is_never_shipped(tmp_path: Path, bucket: str) -> None:
    """A rollout open in a live writer is skipped, even when it has a stop point already."""
    root = tmp_path / "root"
    root.mkdir()
    with RolloutWriter.create(root, session_id="live-1") as w:
        w.append(Message(role="user", content="hi"))
        w.drain()
        report = ship(root, bucket, move=True, include_unsealed=True)
        assert [i.action for i in report.items] == [ShipAction.SKIPPED]
        assert "writer holds it" in report.items[0].reason
    assert objects(bucket) == {}


def test_a_wrong_credential_is_one_clear_error_and_deletes_nothing(
    local: Path, bucket: str, s3_env: LocalS3
) -> None:
    """With credentials the store refuses, ship stops at once with one error line; no file goes."""
    before = sorted(os.listdir(local))
    s3_env.set_auth(enforced=True)
    try:
        with pytest.raises(StoreAccessError):
            ship(local, bucket, move=True)
        result = run("ship", "--root", str(local), "--to", bucket, "--move")
    finally:
        s3_env.set_auth(enforced=False)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "access denied" in result.output
    assert "credentials" in result.output
    assert sorted(os.listdir(local)) == before


def test_names_that_are_not_rollout_names_are_skipped(tmp_path: Path, bucket: str) -> None:
    """A .jsonl file whose name the naming rule does not parse keeps no mirror: it stays."""
    root = tmp_path / "root"
    RolloutBuilder(root).extend(conversation(1)).stop(StopKind.PAUSED).write(root / "notes.jsonl")
    report = ship(root, bucket, move=True)
    assert [i.action for i in report.items] == [ShipAction.SKIPPED]
    assert "not a rollout name" in report.items[0].reason
    assert (root / "notes.jsonl").exists()


def test_ship_wants_a_local_root_and_a_url(tmp_path: Path, bucket: str) -> None:
    """`ship --root s3://...` and `--to DIR` are usage errors, not silent no-ops."""
    assert run("ship", "--root", bucket, "--to", bucket).exit_code == 2
    assert run("ship", "--root", str(tmp_path), "--to", str(tmp_path)).exit_code == 2


def test_shipping_moves_each_byte_once(local: Path, bucket: str, s3_env: LocalS3) -> None:
    """The bytes sent and received while shipping are at most 1.05 times the data shipped."""
    data = sum(len(b) for b in sealed(local).values())
    s3_env.reset_counts()
    ship(local, bucket)
    wire = sum(r.sent_bytes + r.body_bytes for r in s3_env.counted())
    assert data <= wire <= 1.05 * data


def test_a_ship_killed_at_a_random_moment_is_finished_by_the_next(
    tmp_path: Path, bucket: str, s3_env: LocalS3
) -> None:
    """`rollout ship --move` killed with SIGKILL mid-run: a rerun ships the rest; each file
    ends up exactly once in the bucket with its bytes, and none is lost."""
    import signal
    import subprocess
    import sys
    import time

    root = tmp_path / "many"
    for i in range(60):
        RolloutBuilder(root, session_id=f"k{i:03d}").extend(conversation(2)).stop(
            StopKind.COMPLETED
        ).write()
    before = {p.name: p.read_bytes() for p in root.glob("*.jsonl")}
    fs = fsspec.filesystem("s3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "replay", "ship", "--root", str(root), "--to", bucket, "--move"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            fs.invalidate_cache()
            if len(fs.find(bucket.removeprefix("s3://"))) >= 10:
                break
            time.sleep(0.02)
        killed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    left = len(list(root.glob("*.jsonl")))
    assert killed, "the ship finished before it could be killed: ship more files"
    assert 0 < left < 60, left
    report = ship(root, bucket, move=True)
    assert report.ok
    assert list(root.glob("*.jsonl")) == []
    assert objects(bucket) == {f"2026-12-02/{n}": b for n, b in before.items()}
