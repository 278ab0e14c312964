"""The fleet's guards (ADR 0141, 0143, 0145, 0158): an interrupted upload commits nothing, two
ships of one root do not report each other's moves as failures, and SQL reads the objects the
listing lists and says when its index is damaged or behind."""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
import pytest

from ledger import DegradationKind, Message, RolloutWriter, StopKind
from replay import read_replay
from replay.fleet import ShipAction, build_index, fleet_sql, ship
from replay.fleet import _ship as ship_module
from replay.retention import prune


def _session(root: Path, sid: str, *, pad: int = 0) -> Path:
    with RolloutWriter.create(root, session_id=sid, durability="os") as w:
        w.append(Message(role="user", content="q " + "x" * pad))
        w.append(Message(role="assistant", content="a"))
        w.stop(StopKind.COMPLETED)
    return w.path


def _objects(url: str) -> dict[str, int]:
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    return {p: int(i["size"]) for p, i in fs.find(url.removeprefix("s3://"), detail=True).items()}


def test_an_interrupted_upload_commits_nothing(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between two parts of a multipart upload leaves no object (the upload is aborted,
    never completed with the parts sent); the next ship uploads the whole file."""
    path = _session(tmp_path, "big", pad=ship_module.PART_BYTES + 1024)
    real_pread = os.pread
    uploading = []

    def pread(fd: int, n: int, offset: int) -> bytes:
        # The hash reads 1 MiB at a time, the upload a part: stop before the upload's second.
        if n == ship_module.PART_BYTES:
            uploading.append(offset)
        elif uploading and offset >= ship_module.PART_BYTES:
            raise KeyboardInterrupt
        return real_pread(fd, n, offset)

    with monkeypatch.context() as patch:
        patch.setattr(os, "pread", pread)
        with pytest.raises(KeyboardInterrupt):
            ship(tmp_path, f"{bucket}/t")
    assert uploading == [0]
    assert _objects(bucket) == {}
    report = ship(tmp_path, f"{bucket}/t")
    assert [i.action for i in report.items] == [ShipAction.UPLOADED]
    assert list(_objects(bucket).values()) == [path.stat().st_size]


def test_ship_to_a_local_directory_url(tmp_path: Path) -> None:
    """A ``file://`` destination gets its day folders made: the file lands under its day."""
    root = tmp_path / "root"
    path = _session(root, "s")
    dest = tmp_path / "dest"
    report = ship(root, f"file://{dest}", move=True)
    assert report.ok
    (landed,) = dest.rglob("*.jsonl")
    assert landed.name == path.name
    assert not path.exists()


def test_files_another_ship_moved_are_not_failures(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second ``ship --move`` of one root finds files already moved by the first (gone before
    it opens them, or deleted between its check and its delete): skipped or shipped, never
    failed."""
    first, second = _session(tmp_path, "a"), _session(tmp_path, "b")
    assert sorted([first, second]) == [first, second]
    real_same = ship_module._same_bytes

    def same_then_gone(*args: object) -> bool:
        ok = real_same(*args)  # type: ignore[arg-type]
        first.unlink(missing_ok=True)  # the other ship deletes it now
        return ok

    monkeypatch.setattr(ship_module, "_same_bytes", same_then_gone)
    report = ship(
        tmp_path, f"{bucket}/t", move=True, progress=lambda _: second.unlink(missing_ok=True)
    )
    assert report.ok
    assert [i.action for i in report.items] == [ShipAction.UPLOADED, ShipAction.SKIPPED]
    assert report.items[0].moved is False
    assert "gone since it was listed" in report.items[1].reason


def test_records_leave_out_the_trash_and_hidden_folders(tmp_path: Path) -> None:
    """`records` over a local root reads the sessions the listing shows: not the trash's files
    nor its audit log."""
    _session(tmp_path, "kept")
    prune(tmp_path, named=[_session(tmp_path, "pruned")])
    with fleet_sql(tmp_path) as q:
        rows = q.query("SELECT DISTINCT session_id FROM records WHERE type = 'session_meta'").rows
    assert rows == (("kept",),)


def test_a_key_no_path_can_name_is_left_out_of_records_with_a_note(
    tmp_path: Path, bucket: str
) -> None:
    """An object whose key holds ``?versionId=`` (or a glob character) does not break every
    query of `records`: it is left out, and the note names it."""
    fs = fsspec.filesystem("s3")
    good = _session(tmp_path, "good")
    fs.put_file(str(good), f"{bucket}/t/2026-12-03/{good.name}")
    hostile = _session(tmp_path / "other", "hostile")
    import boto3  # s3fs would read the key's "?versionId=" as a version

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    key = f"t/q?versionId=abc/{hostile.name}"
    client.put_object(Bucket=bucket.removeprefix("s3://"), Key=key, Body=hostile.read_bytes())
    with fleet_sql(f"{bucket}/t") as q:
        assert q.query("SELECT count(DISTINCT url) FROM records").rows == ((1,),)
        assert "versionId=abc" in (q.note or "")


def test_rebuild_removes_a_damaged_part_and_sql_says_so_meanwhile(
    tmp_path: Path, bucket: str
) -> None:
    """A part that cannot be read empties `sessions` with a note (the query still runs), and
    `index --rebuild` removes it with the others, so that the index is used again."""
    fs = fsspec.filesystem("s3")
    path = _session(tmp_path, "s")
    fs.put_file(str(path), f"{bucket}/t/2026-12-03/{path.name}")
    build_index(f"{bucket}/t")
    bad = f"{bucket}/t/.index/day=2026-12-03/part-bad.parquet"
    fs.pipe_file(bad, b"PAR1 not really")
    with fleet_sql(f"{bucket}/t") as q:
        assert q.query("SELECT count(*) FROM sessions").rows == ((0,),)
        assert "cannot be read" in (q.note or "")
    build_index(f"{bucket}/t", rebuild=True)
    fs.invalidate_cache()
    assert not fs.exists(bad)
    with fleet_sql(f"{bucket}/t") as q:
        assert q.query("SELECT count(*) FROM sessions").rows == ((1,),)
        assert q.note is None


def test_sql_says_when_the_index_is_behind_the_store(tmp_path: Path, bucket: str) -> None:
    """`sessions` from an index that misses new objects or holds deleted ones comes with a note
    counting them, as the listing reports its index's age."""
    fs = fsspec.filesystem("s3")
    a, b = _session(tmp_path, "a"), _session(tmp_path, "b")
    fs.put_file(str(a), f"{bucket}/t/2026-12-03/{a.name}")
    build_index(f"{bucket}/t")
    with fleet_sql(f"{bucket}/t") as q:
        assert q.note is None
    fs.put_file(str(b), f"{bucket}/t/2026-12-03/{b.name}")
    fs.rm_file(f"{bucket}/t/2026-12-03/{a.name}")
    with fleet_sql(f"{bucket}/t") as q:
        assert "1 object(s) new or changed since, 1 gone" in (q.note or "")


def test_ship_move_keeps_the_source_a_local_fork_reads(tmp_path: Path) -> None:
    """`ship --move` ships a session that a fork reads by reference but keeps its local copy,
    saying why: deleting it would leave the fork without its history; the fork itself moves."""
    root = tmp_path / "root"
    source = _session(root, "src")
    fork = RolloutWriter.fork(source)
    fork.append(Message(role="user", content="and then?"))
    fork.stop(StopKind.COMPLETED)
    fork.close()
    dest = tmp_path / "dest"
    report = ship(root, f"file://{dest}", move=True)
    assert report.ok
    by_path = {i.path.name: i for i in report.items}
    kept = by_path[source.name]
    assert not kept.moved
    assert "fork" in kept.reason
    assert source.exists()
    assert by_path[fork.path.name].moved
    assert sorted(p.name for p in dest.rglob("*.jsonl")) == sorted([source.name, fork.path.name])


def test_a_session_that_grew_after_shipping_is_named_as_such(tmp_path: Path) -> None:
    """A paused session shipped, then resumed, is a conflict (shipping never replaces an
    object) whose reason says the store holds an earlier state of it and what to do."""
    root = tmp_path / "root"
    dest = tmp_path / "dest"
    with RolloutWriter.create(root, session_id="grows", durability="os") as w:
        w.append(Message(role="user", content="first"))
        w.stop(StopKind.PAUSED)
    assert ship(root, f"file://{dest}").ok
    with RolloutWriter.open(w.path) as again:
        again.append(Message(role="user", content="second"))
        again.stop(StopKind.COMPLETED)
    (item,) = ship(root, f"file://{dest}").items
    assert item.action is ShipAction.CONFLICT
    assert "earlier state" in item.reason
    assert "remove the remote one" in item.reason


def _source_and_fork(root: Path) -> tuple[Path, Path]:
    source = _session(root, "src")
    fork = RolloutWriter.fork(source)
    fork.append(Message(role="user", content="and then?"))
    fork.stop(StopKind.COMPLETED)
    fork.close()
    return source, fork.path


def test_a_fork_stored_as_an_object_reads_its_source_from_the_store(tmp_path: Path) -> None:
    """A fork shipped beside its source replays from the store with its inherited conversation,
    verified, whether the store's root is given or implied by the fork's URL; `verify --all` on
    the store passes."""
    root = tmp_path / "root"
    _source_and_fork(root)
    local = {r.path.name: r for r in (read_replay(p) for p in root.glob("*.jsonl"))}
    dest = f"file://{tmp_path / 'dest'}"
    report = ship(root, dest)
    assert report.ok
    (fork_item,) = [i for i in report.items if "_src" not in i.path.name]
    assert fork_item.url is not None
    for given_root in (None, dest):
        rep = read_replay(fork_item.url, root=given_root)
        assert rep.verified, rep.degraded
        assert rep.exact
        assert list(rep.messages) == list(local[fork_item.path.name].messages)


def test_a_stored_fork_without_its_source_says_so(tmp_path: Path) -> None:
    """A fork shipped without its source is not verified and names the missing source."""
    root = tmp_path / "root"
    source, fork = _source_and_fork(root)
    dest = tmp_path / "dest"
    assert ship(root, f"file://{dest}").ok
    (shipped_source,) = dest.rglob(source.name)
    shipped_source.unlink()
    (shipped_fork,) = dest.rglob(fork.name)
    rep = read_replay(f"file://{shipped_fork}")
    assert not rep.verified
    assert DegradationKind.FORK_SOURCE_MISSING in {d.kind for d in rep.degraded}
