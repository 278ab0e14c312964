"""The `rollout` command as a user runs it: in process with CliRunner, and a few subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger import json_schema, rollout_filename
from ledger.messages import Message, Reasoning, ToolCall
from replay._cli_paths import CliError, parse_since, resolve_root, resolve_target
from replay._cli_render import pair_tool_outputs
from replay.cli import cli

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
    """--root beats ROLLOUT_HOME, which beats ~/.rollout; an empty ROLLOUT_HOME counts as unset."""
    env = {"ROLLOUT_HOME": str(tmp_path / "env")}
    assert resolve_root(str(tmp_path / "opt"), env) == tmp_path / "opt"
    assert resolve_root(None, env) == tmp_path / "env"
    assert resolve_root(None, {"ROLLOUT_HOME": ""}) == Path.home() / ".rollout"
    assert resolve_root(None, {}) == Path.home() / ".rollout"


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


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "a\x00b", "-rf", "a_b", " "])
def test_arguments_that_could_escape_the_root_are_refused(tmp_path: Path, bad: str) -> None:
    """Ids with separators, '..', NUL or other characters never reach the file system."""
    root = tmp_path / "root"
    fake_rollout(root, "abc1")
    (tmp_path / "x").write_text("outside")
    with pytest.raises(CliError):
        resolve_target(root, bad)


def test_a_path_outside_the_root_is_refused_even_through_a_symlink(tmp_path: Path) -> None:
    """A path argument must lie inside the root once symlinks are resolved."""
    root = tmp_path / "root"
    outside = fake_rollout(tmp_path / "elsewhere", "abc1")
    root.mkdir()
    (root / "link.jsonl").symlink_to(outside)
    with pytest.raises(CliError, match="outside the root"):
        resolve_target(root, str(outside))
    with pytest.raises(CliError, match="outside the root"):
        resolve_target(root, str(root / "link.jsonl"))
    inside = fake_rollout(root, "def2")
    assert resolve_target(root, str(inside)) == inside


def test_since_accepts_durations_and_dates() -> None:
    """--since takes 30m/2h/3d/1w back from now, or an ISO date taken as UTC."""
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("3d", now) == now - timedelta(days=3)
    assert parse_since("2026-12-01", now) == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(CliError):
        parse_since("yesterday", now)


# --- rendering -----------------------------------------------------------------------------------


def test_tool_outputs_pair_with_their_calls_and_orphans_are_flagged() -> None:
    """Each output goes under its call (all of them, last one counting); an orphan is flagged."""
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
    pairing = pair_tool_outputs(messages)
    assert pairing.outputs == {"c1": (2, 3)}
    assert pairing.inline == {2, 3}
    assert pairing.orphans == {0}
