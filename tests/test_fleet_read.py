"""The read side on object storage: the same answers from an S3 bucket as from local files."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import fsspec
import msgspec
import pytest
from click.testing import CliRunner, Result

import replay
from fleet_data import upload, varied_fleet
from replay.cli import cli
from replay.fleet import ObjectURL, list_fleet
from replay.fleet._objects import LISTING_BYTES
from replay.fleet.testing import LocalS3
from replay.sessions import SessionEntry


def run(*args: str) -> Result:
    """The command in process."""
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


def comparable(e: SessionEntry) -> SessionEntry:
    """An entry without its location, to compare a file's entry with its object's."""
    return msgspec.structs.replace(e, path=Path(e.path.name))


@pytest.fixture
def fleet(tmp_path: Path, bucket: str) -> tuple[list[Path], str]:
    """The varied fleet, as local files and as objects under ``bucket``/rollouts."""
    paths = varied_fleet(tmp_path / "local")
    url = f"{bucket}/rollouts"
    upload(paths, url)
    return paths, url


def test_listing_objects_gives_the_entries_of_the_files(fleet: tuple[list[Path], str]) -> None:
    """list_sessions over a bucket equals list_sessions over the same files, entry for entry."""
    paths, url = fleet
    local = replay.list_sessions(paths[0].parent)
    remote = replay.list_sessions(url)
    assert [comparable(e) for e in remote] == [comparable(e) for e in local]
    assert all(isinstance(e.path, ObjectURL) and e.path.startswith(url) for e in remote)
    assert {e.session_id for e in remote} >= {"aa-small", "bb-large", "dd-resumed"}


def test_listing_reads_one_range_per_small_object_and_two_per_large_one(
    fleet: tuple[list[Path], str], s3_env: LocalS3
) -> None:
    """A listing sends no HEAD, one GET per object up to 64 KiB, two over it, within 64 KiB."""
    paths, url = fleet
    s3_env.reset_counts()
    replay.list_sessions(url)
    # A request the client retried (a loaded machine) is one range asked twice: ranges count.
    gets = {
        (r.path, r.range): r
        for r in s3_env.counted()
        if r.method == "GET" and "list-type" not in r.path and r.status < 300
    }
    heads = [r for r in s3_env.counted() if r.method == "HEAD"]
    large = sum(1 for p in paths if p.stat().st_size > LISTING_BYTES)
    assert heads == []
    assert len(gets) == len(paths) + large
    assert all(r.range is not None for r in gets.values())
    per_object: dict[str, int] = {}
    for r in gets.values():
        per_object[r.path] = per_object.get(r.path, 0) + r.body_bytes
    assert len(per_object) == len(paths)
    assert max(per_object.values()) <= LISTING_BYTES


def test_replay_and_stop_facts_of_an_object_equal_those_of_its_file(
    fleet: tuple[list[Path], str],
) -> None:
    """read_replay and read_stop_facts give the same values for an object as for its file."""
    paths, url = fleet
    for p in paths:
        [obj] = [e.path for e in replay.list_sessions(url) if e.path.name == p.name]
        local, remote = (
            replay.read_replay(p, whole_file=True),
            replay.read_replay(obj, whole_file=True),
        )
        assert remote.path == obj
        assert attrs.evolve(remote, path=p) == local
        assert replay.read_stop_facts(obj) == replay.read_stop_facts(p)


def test_find_session_resolves_ids_and_prefixes_from_object_names(
    fleet: tuple[list[Path], str],
) -> None:
    """find_session works on a URL root as on a directory: exact ids, prefixes, not found."""
    _, url = fleet
    found = replay.find_session(url, "bb-l")
    assert isinstance(found, ObjectURL)
    assert found.name.startswith("2026-12-02_09-32-00_bb-large")
    with pytest.raises(replay.SessionNotFoundError):
        replay.find_session(url, "zz")


def test_an_object_is_replayed_through_a_buffered_reader_in_large_blocks(
    fleet: tuple[list[Path], str], s3_env: LocalS3
) -> None:
    """Replaying a 200 KB object costs a few ranged requests, never one per line."""
    _, url = fleet
    obj = replay.find_session(url, "bb-large")
    s3_env.reset_counts()
    rep = replay.read_replay(obj)
    assert rep.verified
    gets = [r for r in s3_env.counted() if r.method == "GET"]
    assert 1 <= len(gets) <= 4, gets


def test_the_command_reads_a_bucket_root(fleet: tuple[list[Path], str]) -> None:
    """ls, show, verify, replay, tree, grep and export all take --root s3://..."""
    _, url = fleet
    listed = json.loads(run("ls", "--json", "--root", url).output)
    assert {s["session_id"] for s in listed["sessions"]} >= {"aa-small", "ff-child"}
    assert listed["sessions"][0]["path"].startswith(url)
    assert listed["index"] == {"written_at": None, "from_index": 0, "read": 7}
    shown = run("show", "aa-small", "--root", url)
    assert shown.exit_code == 0, shown.output
    assert "Please look at the repository.a" in shown.output
    assert run("show", "--raw", "aa-small", "--root", url).output.count("\n") == 10
    verified = run("verify", "aa-small", "bb-large", "--root", url)
    assert verified.exit_code == 0, verified.output
    rep = json.loads(run("replay", "bb-large", "--json", "--root", url).output)
    assert rep["verified"] is True
    assert rep["path"].startswith(url)
    tree = run("tree", "ff-child", "--root", url)
    assert "ff-child"[:8] in tree.output
    grep = run("grep", "repository.a", "--root", url)
    assert grep.exit_code == 0, grep.output
    assert grep.output.startswith("aa-small")
    exported = run("export", "aa-small", "--format", "md", "-o", "-", "--root", url)
    assert exported.exit_code == 0, exported.output
    assert "repository.a" in exported.output
    by_url = run("replay", replay.find_session(url, "aa-small"), "--json")
    assert json.loads(by_url.output)["session_id"] == "aa-small"


def test_verify_all_on_a_bucket_in_process_fails_what_is_damaged(
    fleet: tuple[list[Path], str],
) -> None:
    """verify --all --scheduler none checks every object; the damaged head fails it."""
    _, url = fleet
    result = run("verify", "--all", "--scheduler", "none", "--json", "--root", url)
    doc = json.loads(result.output)
    assert result.exit_code == 1
    status = {s["path"].rsplit("/", 1)[-1].split("_")[2]: s["status"] for s in doc["sessions"]}
    assert status["gg-damaged"] == "failed"
    assert status["aa-small"] == "ok"
    assert status["cc-killed"] == "ok"


def test_storage_options_reach_the_store(
    fleet: tuple[list[Path], str], s3_env: LocalS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--storage-option gives fsspec its options: the endpoint, when no variable names it."""
    _, url = fleet
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    fsspec.filesystem("s3").clear_instance_cache()
    result = run(
        "ls", "--json", "--root", url, "--storage-option", f"endpoint_url={s3_env.endpoint}"
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["sessions"]) == 7
    bad = run("ls", "--root", url, "--storage-option", "not an option")
    assert bad.exit_code == 2


def test_listing_an_empty_prefix_lists_nothing_and_a_missing_bucket_is_an_error(
    bucket: str,
) -> None:
    """A prefix without objects lists nothing; a bucket that does not exist is one clear error."""
    assert list_fleet(f"{bucket}/nothing-here").entries == ()
    result = run("ls", "--root", "s3://no-such-bucket-for-rollouts")
    assert result.exit_code == 1
    assert "rollout: error:" in result.output
    assert "not found while listing the root" in result.output


def test_storage_options_last_one_run_and_are_not_set_by_parsing() -> None:
    """Options given on a command line reach only that command, never a later call."""
    from replay.fleet._store import current_storage_options

    with cli.make_context("rollout", ["--storage-option", "anon=true", "ls"]) as ctx:
        assert ctx.meta["rollout.storage_options"] == {"anon": True}
    assert current_storage_options() == {}
    run("ls", "--root", "/nonexistent", "--storage-option", "anon=true")
    assert current_storage_options() == {}


def test_one_objects_entry_and_the_async_forms_take_urls(fleet: tuple[list[Path], str]) -> None:
    """read_session_entry and the async read functions read an object as the listing does."""
    import asyncio

    paths, url = fleet
    listed = {e.path: e for e in replay.list_sessions(url)}
    obj = replay.find_session(url, "aa-small")
    assert replay.read_session_entry(obj).stop == listed[obj].stop
    assert replay.read_session_entry(obj).session_id == "aa-small"
    assert asyncio.run(replay.aread_stop_facts(obj)) == listed[obj].stop
    assert asyncio.run(replay.aread_replay(obj)).verified
    assert len(asyncio.run(replay.alist_sessions(url))) == len(paths)
