"""The `rollout` command as a user runs it: in process with CliRunner, and a few subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result

from ledger import RolloutWriter, StopKind, json_schema, rollout_filename, with_delegation_id
from ledger.messages import Message, Reasoning, ToolCall
from ledger.testing import abandon
from replay import read_replay
from replay.cli import cli
from replay.cli._errors import CliError
from replay.cli._paths import parse_since, resolve_root, resolve_target
from replay.pairing import pair_tool_calls

# --- helpers -----------------------------------------------------------------------------------


def run(*args: str, root: Path | None = None) -> Result:
    """Run the command in process; ``root`` is passed as --root when given."""
    argv = (["--root", str(root)] if root is not None else []) + list(args)
    return CliRunner().invoke(cli, argv, prog_name="rollout")


def rollout_command() -> list[str]:
    """How a user would start the command: the console script next to this Python, else -m."""
    script = shutil.which("rollout", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "replay"]


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command as a real subprocess, with the test's (isolated) environment."""
    return subprocess.run(
        [*rollout_command(), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def assert_one_line_error(stderr: str) -> None:
    """A failure is reported as exactly one line on stderr, and never as a traceback."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("rollout"), stderr
    assert "error:" in lines[0]


def fake_rollout(directory: Path, session_id: str, agent: str | None = None) -> Path:
    """An empty file with a rollout's name: enough for id resolution, which reads only names."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / rollout_filename(datetime(2026, 12, 1, tzinfo=UTC), session_id, agent)
    path.write_bytes(b"")
    return path


# --- the group: version, schema, usage errors ----------------------------------------------------


def test_version_names_the_distribution_version() -> None:
    """`rollout --version` prints the installed version of rollout-ledger."""
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("rollout, version ")


def test_schema_prints_the_json_schema_of_the_format() -> None:
    """`rollout schema` prints exactly ledger.json_schema() as JSON."""
    result = run("schema")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads(json.dumps(json_schema()))


def test_unknown_command_is_a_usage_error_on_one_line() -> None:
    """An unknown subcommand exits with status 2 and one line on stderr."""
    result = run("frobnicate")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr)
    assert "frobnicate" in result.stderr


def test_unknown_option_is_a_usage_error_naming_the_subcommand() -> None:
    """An unknown option exits with status 2, one line that names the subcommand's help."""
    result = run("schema", "--nope")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr)
    assert "rollout schema --help" in result.stderr


# --- root and target resolution ------------------------------------------------------------------


def test_root_option_wins_over_environment(tmp_path: Path) -> None:
    """--root beats ROLLOUT_HOME, which beats ~/.rollout (used only when ROLLOUT_HOME is unset)."""
    env = {"ROLLOUT_HOME": str(tmp_path / "env")}
    assert resolve_root(str(tmp_path / "opt"), env) == tmp_path / "opt"
    assert resolve_root(None, env) == tmp_path / "env"
    assert resolve_root(None, {}) == Path.home() / ".rollout"


@pytest.mark.parametrize(("option", "env"), [("", None), (" ", None), (None, ""), (None, "  ")])
def test_an_empty_root_is_a_usage_error(option: str | None, env: str | None) -> None:
    """`--root ''` or an empty ROLLOUT_HOME is refused, never a silent ~/.rollout."""
    with pytest.raises(CliError, match="empty") as info:
        resolve_root(option, {} if env is None else {"ROLLOUT_HOME": env})
    assert info.value.exit_code == 2


@pytest.mark.parametrize("argv", [["--root", "", "ls"], ["ls", "--root", ""], ["verify", "--all"]])
def test_the_command_refuses_an_empty_root(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command exits 2 with one line for an empty --root (before or after) or ROLLOUT_HOME."""
    monkeypatch.setenv("ROLLOUT_HOME", "")
    result = run(*argv)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr)
    assert "empty" in result.stderr


def test_unique_prefix_resolves_to_its_file(tmp_path: Path) -> None:
    """A session id prefix that matches one rollout under the root names that file."""
    a = fake_rollout(tmp_path, "aaaa1111-x", "coder")
    fake_rollout(tmp_path / "2026" / "12", "bbbb2222-y")
    assert resolve_target(tmp_path, "aaaa") == a
    assert resolve_target(tmp_path, "aaaa1111-x") == a


def test_exact_id_wins_over_a_longer_id_with_the_same_prefix(tmp_path: Path) -> None:
    """An argument equal to one session id names that session even if another id extends it."""
    exact = fake_rollout(tmp_path, "abc")
    fake_rollout(tmp_path, "abcd")
    assert resolve_target(tmp_path, "abc") == exact


def test_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    """A prefix that matches several sessions is an error that names every candidate."""
    fake_rollout(tmp_path, "abc1")
    fake_rollout(tmp_path, "abc2")
    with pytest.raises(CliError, match="ambiguous") as info:
        resolve_target(tmp_path, "abc")
    assert "abc1" in info.value.message
    assert "abc2" in info.value.message


def test_unknown_prefix_is_a_clear_error(tmp_path: Path) -> None:
    """A prefix that matches nothing says so and points at `rollout ls`."""
    fake_rollout(tmp_path, "abc1")
    with pytest.raises(CliError, match=r"no session .* 'zzz'"):
        resolve_target(tmp_path, "zzz")


@pytest.mark.parametrize("bad", ["x", "a/b", "a\x00b", "-rf", "a_b", " ", "abc1/.."])
def test_ids_never_reach_the_file_system(
    tmp_path: Path, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An argument that is not a path is only compared with ids, even if a file has its name."""
    root = tmp_path / "root"
    fake_rollout(root, "abc1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").write_text("outside")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").write_text("outside")
    with pytest.raises(CliError):
        resolve_target(root, bad)


def test_a_path_names_its_file_wherever_it_is(tmp_path: Path) -> None:
    """A path argument is read where it points, inside the root, outside it, or through a link."""
    root = tmp_path / "root"
    outside = fake_rollout(tmp_path / "elsewhere", "abc1")
    root.mkdir()
    (root / "link.jsonl").symlink_to(outside)
    assert resolve_target(root, str(outside)) == outside
    assert resolve_target(root, str(root / "link.jsonl")).resolve() == outside
    inside = fake_rollout(root, "def2")
    assert resolve_target(root, str(inside)) == inside
    with pytest.raises(CliError, match="no such file"):
        resolve_target(root, str(tmp_path / "missing.jsonl"))


def test_a_prefix_never_resolves_to_a_link_that_leads_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even when the walk hands it a planted link, id resolution refuses a file outside the root."""
    root = tmp_path / "root"
    root.mkdir()
    outside = fake_rollout(tmp_path / "elsewhere", "secret1")
    link = root / outside.name
    link.symlink_to(outside)
    monkeypatch.setattr("replay.lookup.iter_rollout_paths", lambda *_, **__: iter([link]))
    with pytest.raises(CliError, match="outside the root"):
        resolve_target(root, "secret")


def test_since_accepts_durations_and_dates() -> None:
    """--since takes 30m/2h/3d/1w back from now, or an ISO date taken as UTC."""
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("3d", now) == now - timedelta(days=3)
    assert parse_since("2026-12-01", now) == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(CliError):
        parse_since("yesterday", now)


@pytest.mark.parametrize(
    "value",
    [
        "999999999d",
        "99999999999999999999w",
        "9" * 5000 + "s",
        "0001-01-01T00:00+01:00",
        "\u0663d",
        "9999-12-31T23:59-01:00",
    ],
)
def test_since_out_of_range_is_a_usage_error(value: str) -> None:
    """A duration or date out of the calendar's range is a usage error (exit 2), never a crash."""
    with pytest.raises(CliError) as info:
        parse_since(value, datetime(2026, 12, 2, tzinfo=UTC))
    assert info.value.exit_code == 2


def test_ls_since_out_of_range_exits_2_on_one_line(tmp_path: Path) -> None:
    """The issue's recipe: `rollout ls --since 999999999d` is one line and exit 2."""
    tmp_path.mkdir(exist_ok=True)
    result = run("ls", "--since", "999999999d", root=tmp_path)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr)
    assert "out of range" in result.stderr


# --- rendering -----------------------------------------------------------------------------------


def test_tool_outputs_pair_with_their_calls_and_orphans_are_flagged() -> None:
    """Each output goes under its call of its turn (the last one counting); orphans flagged."""
    messages = [
        Message(role="tool", tool_call_id="early", content="orphan"),
        Message(
            role="assistant",
            reasoning=(Reasoning(text="think", signature="s"),),
            tool_calls=(ToolCall(id="c1", name="shell"), ToolCall(id="c2", name="shell")),
        ),
        Message(role="tool", tool_call_id="c1", content="first"),
        Message(role="tool", tool_call_id="c1", content="second"),
    ]
    pairing = pair_tool_calls(messages)
    assert dict(pairing.outputs) == {(1, "c1"): (2, 3)}
    assert set(pairing.answers) == {2, 3}
    assert pairing.orphans == {0}
    assert [key for key, _ in pairing.open_calls()] == [(1, "c2")]


def test_show_pairs_outputs_per_turn_when_ids_are_reused(tmp_path: Path) -> None:
    """The D11 recipe in the transcript: call_0 of each turn shows its own output."""
    weather = [
        Message(role="user", content="Weather in Paris, then Rome?"),
        Message(role="assistant", tool_calls=(ToolCall(id="call_0", name="paris_weather"),)),
        Message(role="tool", tool_call_id="call_0", content="Paris: 18C"),
        Message(role="assistant", tool_calls=(ToolCall(id="call_0", name="rome_weather"),)),
        Message(role="tool", tool_call_id="call_0", content="Rome: 24C"),
    ]
    with RolloutWriter.create(tmp_path, session_id="weather") as w:
        for m in weather:
            w.append(m)
        w.stop(StopKind.PAUSED)
    out = run("show", "weather", root=tmp_path).stdout
    assert out.index("paris_weather") < out.index("Paris: 18C") < out.index("rome_weather")
    assert out.index("rome_weather") < out.index("Rome: 24C")
    assert "superseded" not in out
    assert "no output recorded" not in out


# --- the demo and every subcommand on its output -------------------------------------------------


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's output, written once; tests copy it so that each may damage its own."""
    root = tmp_path_factory.mktemp("demo") / "root"
    result = run("demo", root=root)
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def demo_root(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo's root."""
    root = tmp_path / "root"
    shutil.copytree(demo_template, root)
    return root


def ls_json(root: Path, *args: str) -> list[dict[str, object]]:
    """The sessions `rollout ls --json` lists."""
    result = run("ls", "--json", *args, root=root)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["rollout_json"] == 1
    sessions: list[dict[str, object]] = doc["sessions"]
    return sessions


def demo_ids(root: Path) -> tuple[str, str]:
    """The parent's and the child's session ids."""
    by_agent = {s["agent_name"]: s for s in ls_json(root)}
    return str(by_agent["coder"]["session_id"]), str(by_agent["researcher"]["session_id"])


def parent_file(root: Path) -> Path:
    """The demo parent's rollout file."""
    (path,) = root.glob("*_coder.jsonl")
    return path


def test_demo_reports_each_step_and_writes_two_sessions(tmp_path: Path) -> None:
    """`rollout demo` creates the root, writes parent and child, and narrates six steps."""
    root = tmp_path / "fresh" / "root"
    result = run("demo", root=root)
    assert result.exit_code == 0, result.output
    for n, what in enumerate(("Write", "List", "Verify", "Replay", "Resume", "Try"), start=1):
        assert f"{n}. {what}" in result.stdout
    assert "NOT verified" not in result.stdout
    assert len(list(root.glob("*.jsonl"))) == 2


def test_demo_writes_what_it_promises(demo_root: Path) -> None:
    """The demo's parent has system, reasoning with signatures, paired tool calls, a compaction."""
    records = [json.loads(line) for line in parent_file(demo_root).read_text().splitlines()]
    types = [r["type"] for r in records]
    assert types[0] == "session_meta"
    assert {"reasoning", "compacted", "agent_checkpoint", "terminal"} <= set(types)
    assert types.count("agent_checkpoint") == 2  # paused, resumed, paused again
    assert all(r["reasoning"].get("signature") for r in records if r["type"] == "reasoning")
    roles = [r["message"]["role"] for r in records if r["type"] == "message"]
    assert {"system", "user", "assistant", "tool"} <= set(roles)
    assert records[-1] == {**records[-1], "type": "terminal", "stop_kind": "paused"}


def test_ls_json_lists_parent_and_child_newest_first(demo_root: Path) -> None:
    """`ls --json` gives both sessions, newest first, with stop, eligibility and coordinates."""
    sessions = ls_json(demo_root)
    assert len(sessions) == 2
    started = [str(s["started_at"]) for s in sessions]
    assert started == sorted(started, reverse=True)
    parent_id, child_id = demo_ids(demo_root)
    by_id = {s["session_id"]: s for s in sessions}
    parent, child = by_id[parent_id], by_id[child_id]
    assert parent["stop"] == {**parent["stop"], "kind": "paused", "found": True}  # type: ignore[dict-item]
    assert parent["eligibility"]["replayable"] is True  # type: ignore[index]
    assert parent["messages"] == 9
    assert child["parent_session_id"] == parent_id
    assert child["delegation_id"] == "toolu_02"
    assert child["eligibility"]["replayable"] is False  # type: ignore[index]
    assert child["stop"]["kind"] == "completed"  # type: ignore[index]


def test_ls_filters_by_agent_resumable_and_since(demo_root: Path) -> None:
    """--agent, --resumable and --since narrow the listing; none of them hides unknowns."""
    assert [s["agent_name"] for s in ls_json(demo_root, "--agent", "researcher")] == ["researcher"]
    assert [s["agent_name"] for s in ls_json(demo_root, "--resumable")] == ["coder"]
    assert len(ls_json(demo_root, "--since", "1h")) == 2
    assert len(ls_json(demo_root, "--since", "2000-01-01")) == 2
    assert ls_json(demo_root, "--since", "2999-01-01") == []


def test_ls_table_shows_each_session(demo_root: Path) -> None:
    """The human table names each session by a short id, with stop kind and resumability."""
    parent_id, child_id = demo_ids(demo_root)
    result = run("ls", root=demo_root)
    assert result.exit_code == 0
    assert parent_id[:8] in result.stdout
    assert child_id[:8] in result.stdout
    assert "paused" in result.stdout
    assert "completed" in result.stdout


def test_show_pairs_tool_calls_with_outputs_and_folds_reasoning(demo_root: Path) -> None:
    """`show PREFIX` prints roles, a reasoning summary, each call followed by its output."""
    parent_id, _ = demo_ids(demo_root)
    result = run("show", parent_id[:6], root=demo_root)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "reasoning (thinking" in out
    assert "signed" in out
    call = out.index("\u2192 shell [toolu_05]")
    assert out.index("\u2190 output: branch pushed") > call
    assert "rebuilt_from_compacted" in out
    assert "resumable    yes" in out


def test_show_child_names_its_delegation(demo_root: Path) -> None:
    """A delegated child's header names its parent session and the delegating call."""
    parent_id, child_id = demo_ids(demo_root)
    result = run("show", child_id, root=demo_root)
    assert result.exit_code == 0
    assert f"session {parent_id}, call toolu_02" in result.stdout


def test_show_raw_prints_every_record_as_json(demo_root: Path) -> None:
    """`show --raw` prints one JSON record per line, as many as the file holds."""
    path = parent_file(demo_root)
    result = run("show", "--raw", str(path), root=demo_root)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines == path.read_text().splitlines()


def test_show_prints_message_text_literally(tmp_path: Path) -> None:
    """Text that looks like terminal markup is printed as written, never interpreted."""
    with RolloutWriter.create(tmp_path, session_id="markup") as w:
        w.append(Message(role="user", content="[bold red]not markup[/] and [link=x]y[/link]"))
        w.stop(StopKind.PAUSED)
    result = run("show", "markup", root=tmp_path)
    assert result.exit_code == 0
    assert "[bold red]not markup[/] and [link=x]y[/link]" in result.stdout


def test_verify_all_passes_on_the_demo(demo_root: Path) -> None:
    """`verify --all --json` finds both sessions verified and exits 0."""
    result = run("verify", "--all", "--json", root=demo_root)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True
    assert [s["status"] for s in doc["sessions"]] == ["ok", "ok"]


def tamper(path: Path) -> None:
    """Change one character inside a message's text, keeping the line valid JSON."""
    data = path.read_bytes()
    assert data.count(b"Yes, go ahead.") == 1
    path.write_bytes(data.replace(b"Yes, go ahead.", b"Yes, go ahead!"))


def test_verify_detects_one_edited_character(demo_root: Path) -> None:
    """Editing one character of a message makes `verify` say FAILED and exit 1."""
    tamper(parent_file(demo_root))
    result = run("verify", "--all", root=demo_root)
    assert result.exit_code == 1
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert "digest_mismatch" in failed
    assert sum(line.startswith("OK") for line in result.stdout.splitlines()) == 1
    doc = json.loads(run("verify", "--all", "--json", root=demo_root).stdout)
    assert doc["ok"] is False
    assert doc["failed"] == 1


def test_verify_needs_arguments_or_all(demo_root: Path) -> None:
    """`verify` with neither sessions nor --all is a usage error (status 2)."""
    result = run("verify", root=demo_root)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr)


def test_verify_strict_fails_a_session_without_checkpoint(tmp_path: Path) -> None:
    """A session with no checkpoint is 'unverified': exit 0, but 1 with --strict."""
    w = RolloutWriter.create(tmp_path, session_id="running")
    w.append(Message(role="user", content="hello"))
    w.drain()
    abandon(w)  # killed before its first stop
    result = run("verify", "running", root=tmp_path)
    assert result.exit_code == 0
    assert result.stdout.startswith("UNVERIFIED")
    assert run("verify", "--strict", "running", root=tmp_path).exit_code == 1


def test_replay_json_gives_the_messages_exactly(demo_root: Path) -> None:
    """`replay --json` holds the messages in the record format, equal to read_replay's."""
    parent_id, _ = demo_ids(demo_root)
    result = run("replay", parent_id[:8], "--json", root=demo_root)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["verified"] is True
    assert doc["over_budget"] is False
    assert doc["handoff_report"] is None
    decoded = tuple(
        msgspec.json.decode(json.dumps(m).encode(), type=Message) for m in doc["messages"]
    )
    assert decoded == read_replay(parent_file(demo_root)).messages
    assert decoded[-1].text() == "Pushed. Shall I open the pull request?"


def test_replay_over_budget_exits_3_with_the_handoff_report(demo_root: Path) -> None:
    """Over --budget, `replay` still prints the replay, adds the hand-off report, exits 3."""
    parent_id, _ = demo_ids(demo_root)
    result = run("replay", parent_id, "--budget", "10", "--json", root=demo_root)
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["over_budget"] is True
    assert doc["handoff_report"].startswith(f"# Hand-off: session ` {parent_id} `")
    assert len(doc["messages"]) == 9
    human = run("replay", parent_id, "--budget", "10", root=demo_root)
    assert human.exit_code == 3
    assert "# Hand-off" in human.stdout


def test_replay_of_a_tampered_file_exits_1(demo_root: Path) -> None:
    """A replay whose digest does not verify exits 1 and says so in its JSON."""
    tamper(parent_file(demo_root))
    result = run("replay", str(parent_file(demo_root)), "--json", root=demo_root)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["verified"] is False
    assert "digest_mismatch" in {d["kind"] for d in doc["degraded"]}


def test_tree_puts_the_child_under_its_parent(demo_root: Path) -> None:
    """`tree --json` has the parent as a root with the child under it; a prefix picks the tree."""
    parent_id, child_id = demo_ids(demo_root)
    for args in ((), (child_id[:8],)):
        doc = json.loads(run("tree", "--json", *args, root=demo_root).stdout)
        (top,) = doc["roots"]
        assert top["session_id"] == parent_id
        assert [c["session_id"] for c in top["children"]] == [child_id]
        assert doc["detached"] == []
    human = run("tree", root=demo_root).stdout
    assert human.index(parent_id[:8]) < human.index(child_id[:8])


def test_tree_flags_a_child_without_coordinates(demo_root: Path) -> None:
    """A child with a delegation id but no parent session id is detached and flagged."""
    with with_delegation_id("call_x"), RolloutWriter.create(demo_root, session_id="lost") as w:
        w.stop(StopKind.PAUSED)
    doc = json.loads(run("tree", "--json", root=demo_root).stdout)
    (lost,) = doc["detached"]
    assert lost["session_id"] == "lost"
    assert "child_without_coordinates" in lost["flags"]
    assert all(r["session_id"] != "lost" for r in doc["roots"])
    assert "child_without_coordinates" in run("tree", root=demo_root).stdout


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("show", "nosuchsession"),
        ("show", "./no/such/file.jsonl"),
        ("replay", "a/b"),
        ("verify", "zz"),
        ("tree", "zz"),
        ("show", "/no/such/file"),
    ],
)
def test_bad_session_arguments_fail_on_one_line(demo_root: Path, args: tuple[str, ...]) -> None:
    """Unknown ids, bad prefixes and paths outside the root: one line on stderr, exit 1."""
    result = run(*args, root=demo_root)
    assert result.exit_code == 1
    assert_one_line_error(result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["ls", "tree", "verify --all", "show abc"])
def test_missing_root_fails_on_one_line(tmp_path: Path, command: str) -> None:
    """A root that does not exist is named in a one-line error with what to do."""
    result = run(*command.split(), root=tmp_path / "missing")
    assert result.exit_code == 1
    assert_one_line_error(result.stderr)
    assert "ROLLOUT_HOME" in result.stderr


def test_unexpected_failure_is_one_line_unless_debugging(
    demo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug inside a command is one line on stderr; ROLLOUT_DEBUG=1 shows the traceback."""

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("replay.cli.commands.listing.list_sessions", broken)
    result = run("ls", root=demo_root)
    assert result.exit_code == 1
    assert_one_line_error(result.stderr)
    assert "internal error: RuntimeError: boom" in result.stderr
    monkeypatch.setenv("ROLLOUT_DEBUG", "1")
    result = run("ls", root=demo_root)
    assert isinstance(result.exception, RuntimeError)


def test_root_comes_from_rollout_home(demo_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --root the command reads $ROLLOUT_HOME."""
    monkeypatch.setenv("ROLLOUT_HOME", str(demo_root))
    assert len(json.loads(run("ls", "--json").stdout)["sessions"]) == 2


# --- as a real process ---------------------------------------------------------------------------


def test_console_script_runs_the_demo_and_verifies_it(tmp_path: Path) -> None:
    """The installed command writes the demo under ROLLOUT_HOME and verifies it, exit 0."""
    env = {"ROLLOUT_HOME": str(tmp_path / "home")}
    demo = run_process("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    verify = run_process("verify", "--all", env=env)
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout.count("OK") == 2


def test_console_script_detects_tampering(demo_root: Path) -> None:
    """In a real process, one edited character makes `verify` exit non-zero."""
    tamper(parent_file(demo_root))
    result = run_process("--root", str(demo_root), "verify", "--all", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["ok"] is False


@pytest.mark.parametrize(
    "args",
    [("show", "nosuch"), ("--root", "{missing}", "ls")],
)
def test_console_script_bad_input_is_one_line(demo_root: Path, args: tuple[str, ...]) -> None:
    """In a real process, bad input gives one line on stderr, a non-zero exit, no traceback."""
    argv = [a.replace("{missing}", str(demo_root / "missing")) for a in args]
    result = run_process(*argv, env={"ROLLOUT_HOME": str(demo_root)})
    assert result.returncode in (1, 2)
    assert_one_line_error(result.stderr)


def test_python_dash_m_replay_is_the_same_command() -> None:
    """`python -m replay --version` runs the command."""
    result = subprocess.run(
        [sys.executable, "-m", "replay", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("rollout, version")


def test_importing_the_packages_does_not_import_rich() -> None:
    """`import replay` and `import replay.cli` stay light: rich loads only inside commands."""
    code = "import sys, replay, replay.cli; print('rich' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# --- damaged files -------------------------------------------------------------------------------


def damage(path: Path) -> None:
    """Break one middle line (not JSON any more) and leave a torn last line."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b"{this is not json\n"
    path.write_bytes(b"".join(lines) + b'{"type":"message","seq":99,"ts":"2026-')


def test_show_highlights_damage_and_raw_reports_it_on_stderr(demo_root: Path) -> None:
    """`show` lists each damaged line as a degradation; `show --raw` keeps stdout parseable."""
    path = parent_file(demo_root)
    damage(path)
    result = run("show", str(path), root=demo_root)
    assert result.exit_code == 0
    flagged = [line for line in result.stdout.splitlines() if line.startswith("! ")]
    assert any("unparseable_line" in line and "line 3" in line for line in flagged)
    assert any("torn_tail" in line for line in flagged)
    raw = run("show", "--raw", str(path), root=demo_root)
    assert raw.exit_code == 0
    for line in raw.stdout.splitlines():
        json.loads(line)
    assert len(raw.stderr.strip().splitlines()) == 2


def test_damaged_head_is_listed_flagged_and_fails_verification(demo_root: Path) -> None:
    """A file whose first line is damaged is still listed (flagged) and fails `verify`."""
    bad = demo_root / "2026-12-01_10-00-00_deadbeef_broken.jsonl"
    bad.write_bytes(b"\x00\x01 not a record\n")
    sessions = {s["session_id"]: s for s in ls_json(demo_root)}
    assert "head_damaged" in sessions["deadbeef"]["flags"]  # type: ignore[operator]
    assert sessions["deadbeef"]["stop"]["found"] is False  # type: ignore[index]
    result = run("verify", "deadbeef", root=demo_root)
    assert result.exit_code == 1
    assert result.stdout.startswith("FAILED")


def test_verify_many_files_prints_one_line_each_without_a_progress_bar(demo_root: Path) -> None:
    """With many files and stdout not a terminal, verify prints exactly one line per session."""
    for n in range(10):
        with RolloutWriter.create(demo_root / "copies", session_id=f"copy{n:04d}") as w:
            w.append(Message(role="user", content=f"copy {n}"))
            w.stop(StopKind.PAUSED)
    result = run("verify", "--all", root=demo_root)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 12 + 1
    assert lines[-1] == "12 session(s) checked, 0 failed"
    assert "\x1b" not in result.stdout
