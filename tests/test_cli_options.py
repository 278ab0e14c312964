"""The command's shared behaviour (issue 11, item 10): global options anywhere, absolute JSON
paths, a closed pipe, two files claiming one id, and `verify --all` going on past a bad file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger import StopKind
from replay.cli import cli
from rollout_files import RolloutBuilder, conversation


def run(*args: str) -> Result:
    """`rollout ARGS...` in process."""
    return CliRunner().invoke(cli, list(args))


def session(root: Path, sid: str, *, name: str | None = None, agent: str | None = None) -> Path:
    """A small paused session ``sid`` under ``root`` (at ``name`` when given)."""
    b = RolloutBuilder(root, session_id=sid, agent_name=agent).extend(conversation(1, tag=sid))
    return b.stop(StopKind.PAUSED).write(root / name if name else None)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root with two sessions."""
    root = tmp_path / "root"
    session(root, "aaaa1111", agent="coder")
    session(root, "bbbb2222")
    return root


# --- global options before or after the subcommand ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--root", "{root}", "--json", "ls"],
        ["ls", "--root", "{root}", "--json"],
        ["--json", "ls", "--root", "{root}"],
        ["--root", "/nowhere", "ls", "--json", "--root", "{root}"],
    ],
)
def test_global_options_work_before_and_after_the_subcommand(root: Path, argv: list[str]) -> None:
    """--root and --json are accepted on either side of the subcommand; the later one wins."""
    result = run(*[a.replace("{root}", str(root)) for a in argv])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["sessions"]) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "--all"],
        ["tree"],
        ["replay", "aaaa"],
        ["grep", "careful"],
    ],
)
def test_every_data_command_takes_json_and_root_after_itself(root: Path, args: list[str]) -> None:
    """Each subcommand with JSON output accepts both options after its own arguments."""
    result = run(*args, "--json", "--root", str(root))
    assert result.exit_code == 0, result.output
    for line in result.stdout.splitlines():
        assert json.loads(line)["rollout_json"] == 1


def test_json_on_a_command_without_json_output_is_a_usage_error(root: Path) -> None:
    """`rollout --json show X` says show has no JSON output (exit 2), rather than ignoring it."""
    result = run("--json", "--root", str(root), "show", "aaaa")
    assert result.exit_code == 2
    assert "no JSON output" in result.stderr
    assert run("show", "aaaa", "--root", str(root)).exit_code == 0


# --- JSON paths are absolute everywhere ----------------------------------------------------------


def _paths(doc: object) -> list[str]:
    found: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in ("path", "root") and isinstance(v, str):
                found.append(v)
            else:
                found += _paths(v)
    elif isinstance(doc, list):
        for v in doc:
            found += _paths(v)
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["ls"],
        ["tree"],
        ["verify", "--all"],
        ["verify", "aaaa", "./root/{bbbb}"],
        ["replay", "./root/{bbbb}"],
        ["grep", "careful"],
    ],
)
def test_json_paths_are_absolute_everywhere(
    root: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a relative --root and relative path arguments, every path in JSON is absolute."""
    monkeypatch.chdir(root.parent)
    bbbb = next(root.glob("*_bbbb2222.jsonl")).name
    argv = [a.replace("{bbbb}", bbbb) for a in args]
    result = run("--root", "root", "--json", *argv)
    assert result.exit_code == 0, result.output
    paths = [p for line in result.stdout.splitlines() for p in _paths(json.loads(line))]
    assert paths
    assert all(os.path.isabs(p) for p in paths), paths
    assert all(Path(p).exists() for p in paths)


# --- a closed pipe -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with enough sessions that `ls`, `verify --all` and `grep` overflow a pipe."""
    root = tmp_path_factory.mktemp("many") / "root"
    for n in range(1200):
        session(root, f"s{n:05d}")
    return root


@pytest.mark.parametrize("args", [["ls"], ["verify", "--all"], ["grep", "careful"]])
def test_a_reader_that_leaves_early_is_no_error(many_sessions: Path, args: list[str]) -> None:
    """`rollout ls | head -1` (or verify, grep): exit 0 and nothing on stderr, as cat does."""
    with subprocess.Popen(
        [sys.executable, "-m", "replay", "--root", str(many_sessions), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        first = child.stdout.readline()  # what `head -1` does: one line, then it leaves
        child.stdout.close()
        err = child.stderr.read()
        code = child.wait(timeout=120)
    assert first
    assert (code, err) == (0, b"")


# --- two files claiming one full id --------------------------------------------------------------


def test_two_files_claiming_one_id_are_reported_as_such(root: Path) -> None:
    """A full id claimed by two files is a duplicate, not an ambiguous prefix; verify fails both."""
    (root / "copy").mkdir()
    twin = session(root / "copy", "aaaa1111", agent="coder")
    for args in (["show", "aaaa1111"], ["show", "aaaa"], ["replay", "aaaa1111"]):
        result = run("--root", str(root), *args)
        assert result.exit_code == 1, args
        assert "claim session id 'aaaa1111'" in result.stderr
        assert "ambiguous" not in result.stderr
    doc = json.loads(run("--root", str(root), "verify", "--all", "--json").stdout)
    status = {Path(s["path"]).resolve(): s["status"] for s in doc["sessions"]}
    assert status[twin.resolve()] == "failed"
    assert list(status.values()).count("failed") == 2
    assert doc["ok"] is False
    human = run("--root", str(root), "verify", "--all")
    assert human.exit_code == 1
    assert human.stdout.count("duplicate_session_id") == 2


# --- verify --all goes on -----------------------------------------------------------------------


def test_verify_all_goes_on_when_a_file_vanishes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that vanishes mid-run fails with the reason; every other file is still checked."""
    from replay.cli.commands import verify

    real = verify.read_replay
    victim = next(root.glob("*_coder.jsonl"))

    def vanish_first(path: Path, **kwargs: object) -> object:
        if Path(path) == victim:
            victim.unlink()
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(verify, "read_replay", vanish_first)
    result = run("--root", str(root), "verify", "--all", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    by_status = {s["status"]: s for s in doc["sessions"]}
    assert set(by_status) == {"failed", "ok"}
    assert "No such file" in by_status["failed"]["error"]
    assert doc["failed"] == 1


def test_a_garbage_line_fails_verification(root: Path) -> None:
    """An unparseable line between intact records is damage: verify says FAILED (issue 11, 13)."""
    path = next(root.glob("*_coder.jsonl"))
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"this is not a record\n")
    path.write_bytes(b"".join(lines))
    result = run("--root", str(root), "verify", str(path))
    assert result.exit_code == 1
    assert result.stdout.startswith("FAILED")
    assert "unparseable_line" in result.stdout


def test_rollout_help_lists_every_subcommand_once() -> None:
    """Every command module's subcommands are registered, in the order of the groups."""
    from replay.cli.commands import GROUPS

    result = run("--help")
    names = list(cli.commands)
    assert names[:3] == ["ls", "tree", "show"]
    assert len(names) == len(set(names)) >= 8
    assert {"grep", "verify", "replay", "schema", "demo"} <= set(names)
    assert len(GROUPS) >= 5
    assert all(name in result.stdout for name in names)
