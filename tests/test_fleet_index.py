"""The fleet index (Parquet by day, incremental) and SQL over the fleet (two typed views)."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import msgspec
import pytest
from click.testing import CliRunner, Result

from fleet_data import upload, varied_fleet
from ledger import Message, StopKind, json_schema, raw_json
from replay.cli import cli
from replay.fleet import build_index, fleet_sql, list_fleet, record_columns
from replay.fleet.testing import LocalS3
from replay.sessions import SessionEntry
from rollout_files import RolloutBuilder, conversation


def run(*args: str) -> Result:
    """The command in process."""
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


def comparable(e: SessionEntry) -> SessionEntry:
    """An entry without its location."""
    return msgspec.structs.replace(e, path=Path(e.path.name))


@pytest.fixture
def fleet(tmp_path: Path, bucket: str) -> tuple[list[Path], str]:
    """The varied fleet as local files and as objects under ``bucket``/rollouts."""
    paths = varied_fleet(tmp_path / "local")
    url = f"{bucket}/rollouts"
    upload(paths, url)
    return paths, url


def test_listing_from_the_index_equals_listing_from_the_objects(
    fleet: tuple[list[Path], str], s3_env: LocalS3
) -> None:
    """Once indexed, a listing reads no object and gives the very entries reading them gives."""
    _, url = fleet
    direct = list_fleet(url, use_index=False)
    report = build_index(url)
    assert (report.objects, report.indexed, report.unchanged, report.errors) == (7, 7, 0, ())
    assert [p.rsplit("/", 2)[-2] for p in report.parts] == ["day=2026-12-02"]
    s3_env.reset_counts()
    listed = list_fleet(url)
    object_gets = [r for r in s3_env.counted() if r.method == "GET" and r.path.endswith(".jsonl")]
    assert object_gets == []
    assert (listed.from_index, listed.read) == (7, 0)
    assert listed.index_written_at == report.written_at
    assert listed.entries == direct.entries


def test_the_index_is_incremental_and_never_trusted_for_a_changed_object(
    fleet: tuple[list[Path], str], tmp_path: Path
) -> None:
    """A new, a replaced and a deleted object: the listing reads the first two and drops the
    third; the next index run reads only those and records the deletion."""
    paths, url = fleet
    build_index(url)
    fs = fsspec.filesystem("s3")
    gone = next(p for p in paths if "cc-killed" in p.name)
    fs.rm_file(f"{url}/2026-12-02/{gone.name}")
    newer = RolloutBuilder(tmp_path / "new", session_id="hh-new").extend(conversation(1))
    upload([newer.stop(StopKind.PAUSED).write()], url)
    grown = next(p for p in paths if "dd-resumed" in p.name)
    data = (
        grown.read_bytes()
        + RolloutBuilder(tmp_path / "x", session_id="x")
        .add(Message(role="user", content="more"))
        .lines[-1]
    )
    fs.pipe_file(f"{url}/2026-12-02/{grown.name}", data)
    listed = list_fleet(url)
    assert {e.session_id for e in listed.entries} == (
        {"aa-small", "bb-large", "dd-resumed", "ee-open", "ff-child", "gg-damaged", "hh-new"}
    )
    assert listed.read == 2  # the new object and the one that grew
    assert listed.entries == list_fleet(url, use_index=False).entries
    second = build_index(url)
    assert (second.indexed, second.removed) == (2, 1)
    third = list_fleet(url)
    assert (third.from_index, third.read) == (7, 0)
    assert third.entries == list_fleet(url, use_index=False).entries
    with fleet_sql(url) as q:
        ids = {r[0] for r in q.query("SELECT session_id FROM sessions").rows}
    assert "cc-killed" not in ids
    assert "hh-new" in ids


def test_rebuild_replaces_every_part(fleet: tuple[list[Path], str]) -> None:
    """`--rebuild` reads everything again and leaves only the parts it wrote."""
    _, url = fleet
    first = build_index(url)
    second = build_index(url, rebuild=True)
    assert second.indexed == 7
    fs = fsspec.filesystem("s3")
    parts = sorted("s3://" + p for p in fs.find(url.removeprefix("s3://") + "/.index"))
    assert parts == sorted(second.parts)
    assert not set(first.parts) & set(parts)


def test_a_damaged_index_is_ignored_never_believed(fleet: tuple[list[Path], str]) -> None:
    """A part that is not Parquet makes the listing read the objects, with the same entries."""
    _, url = fleet
    build_index(url)
    fs = fsspec.filesystem("s3")
    fs.pipe_file(f"{url}/.index/day=2026-12-02/part-zzz.parquet", b"not parquet")
    listed = list_fleet(url)
    assert listed.index_written_at is None
    assert listed.entries == list_fleet(url, use_index=False).entries


def test_index_rows_hold_counts_verdicts_and_usage(bucket: str, tmp_path: Path) -> None:
    """The sessions view has message counts, tool errors, runs and provider token usage."""
    b = RolloutBuilder(tmp_path, session_id="usage-1", agent_name="coder")
    b.add(Message(role="user", content="hi"))
    b.add(
        Message(
            role="assistant",
            content="a",
            extra=raw_json({"usage": {"input_tokens": 10, "output_tokens": 3}}),
        )
    )
    b.add(
        Message(
            role="assistant",
            content="b",
            extra=raw_json({"usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        )
    )
    b.stop(StopKind.PAUSED).add(Message(role="user", content="again")).stop(StopKind.COMPLETED)
    upload([b.write()], bucket)
    build_index(bucket)
    with fleet_sql(bucket) as q:
        row = q.query(
            "SELECT messages, user_messages, assistant_messages, input_tokens, output_tokens, "
            "terminals, checkpoints, status, stop_kind, tier FROM sessions"
        ).rows
    assert row == ((4, 2, 2, 15, 5, 2, 2, "ok", "completed", "nothing_to_resume"),)


def test_the_records_view_is_typed_from_the_published_schema(fleet: tuple[list[Path], str]) -> None:
    """Every record type's fields are columns of the type the JSON Schema gives them."""
    _, url = fleet
    columns = record_columns()
    assert columns["ts"] == "TIMESTAMPTZ"
    assert columns["message_count"] == "BIGINT"
    assert columns["message"].startswith("STRUCT(")
    assert '"tool_calls" STRUCT(' in columns["message"]
    assert '"content" JSON' in columns["message"]
    schema_props = {
        name for branch in json_schema()["anyOf"]
        for name in json_schema()["$defs"][branch["$ref"].rsplit("/", 1)[-1]]["properties"]
    }  # fmt: skip
    assert set(columns) == schema_props
    with fleet_sql(url) as q:
        described = dict(q.query("SELECT column_name, column_type FROM (DESCRIBE records)").rows)
        kinds = dict(q.query("SELECT type, count(*) FROM records GROUP BY type").rows)
        roles = q.query(
            "SELECT DISTINCT message.role FROM records WHERE type = 'message' ORDER BY 1"
        ).rows
        casts = ", ".join(f'CAST(NULL AS {t}) AS "{n}"' for n, t in columns.items())
        declared = dict(
            q.query(f"SELECT column_name, column_type FROM (DESCRIBE SELECT {casts})").rows  # noqa: S608
        )
    assert {k: v for k, v in described.items() if k != "url"} == declared
    assert kinds["session_meta"] == 6  # the damaged head is skipped, not fatal
    assert [r[0] for r in roles] == ["assistant", "system", "tool", "user"]


def test_the_same_query_agrees_on_local_files_and_on_the_bucket(
    fleet: tuple[list[Path], str],
) -> None:
    """A query over `records` gives the same rows from a directory and from its objects."""
    paths, url = fleet
    query = (
        "SELECT type, count(*), sum(coalesce(message_count, 0)), "
        "count(*) FILTER (WHERE message.is_error) FROM records GROUP BY ALL ORDER BY ALL"
    )
    with fleet_sql(paths[0].parent) as local, fleet_sql(url) as remote:
        assert local.query(query) == remote.query(query)


def test_rollout_index_and_sql_from_the_command(fleet: tuple[list[Path], str]) -> None:
    """`rollout index URL` then `rollout sql`: table and JSON output, errors on one line."""
    _, url = fleet
    indexed = run("index", url, "--scheduler", "none", "--json")
    assert indexed.exit_code == 0, indexed.output
    assert json.loads(indexed.output)["indexed"] == 7
    listed = run("ls", "--root", url)
    assert "index written" in listed.output
    assert "7 session(s) from it" in listed.output
    doc = json.loads(
        run("sql", "--json", "--root", url, "SELECT count(*) AS n FROM sessions").output
    )
    assert (doc["columns"], doc["rows"]) == (["n"], [[7]])
    table = run("sql", "--root", url, "SELECT stop_kind, count(*) AS n FROM sessions GROUP BY 1")
    assert table.exit_code == 0
    assert "paused" in table.output
    bad = run("sql", "--root", url, "SELECT nope FROM nowhere")
    assert bad.exit_code == 1
    assert bad.output.startswith("rollout: error: the query failed")


def test_sql_without_an_index_says_so(fleet: tuple[list[Path], str], tmp_path: Path) -> None:
    """Without an index, `sessions` is empty and the command says how to write one."""
    paths, _ = fleet
    result = CliRunner().invoke(
        cli, ["sql", "--root", str(paths[0].parent), "SELECT count(*) FROM sessions"]
    )
    assert result.exit_code == 0
    assert "rollout index" in result.stderr
    empty = run("sql", "--json", "--root", str(tmp_path / "void"), "SELECT 1")
    assert empty.exit_code == 1


def test_usage_records_are_summed_once_per_response(bucket: str, tmp_path: Path) -> None:
    """The index sums the format's usage records as the reducer does: a repeat counts once."""
    from datetime import UTC, datetime

    from ledger import Usage, encode_line

    b = RolloutBuilder(tmp_path, session_id="usage-2").add(Message(role="user", content="hi"))
    when = datetime(2026, 12, 2, 10, tzinfo=UTC)
    once = Usage(seq=90, ts=when, response_id="r1", model="m1", input_tokens=7, output_tokens=2)
    again = Usage(seq=91, ts=when, response_id="r1", model="m1", input_tokens=7, output_tokens=2)
    other = Usage(seq=92, ts=when, model="m1", input_tokens=1, cache_read_tokens=5)
    for u in (once, again, other):
        b.raw(encode_line(u))
    upload([b.write()], bucket)
    build_index(bucket)
    with fleet_sql(bucket) as q:
        row = q.query(
            "SELECT input_tokens, output_tokens, cache_read_tokens, usage_responses FROM sessions"
        ).rows
    assert row == ((8, 2, 5, 2),)
