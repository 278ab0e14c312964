"""`rollout import claude-code|codex`: a summary table, one JSON object, dry runs, defaults."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from replay.cli import cli

DATA = Path(__file__).parent / "data" / "import"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="rollout")


def test_import_prints_a_summary_table(tmp_path: Path) -> None:
    """The summary names each source with its status, lines and dispositions, and a total."""
    result = run("--root", str(tmp_path), "import", "codex", str(DATA / "codex"))
    assert result.exit_code == 0, result.output
    assert "total" in result.output
    assert "1246 line(s), 0 unaccounted; 4 rollout(s)" in result.output
    assert len(list(tmp_path.glob("*.jsonl"))) == 4


def test_import_json_is_one_object_per_run(tmp_path: Path) -> None:
    """--json prints one object: per source file its lines, unaccounted, rollouts and counts."""
    result = run(
        "import", "claude-code", str(DATA / "claude-code"), "--root", str(tmp_path), "--json"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["unaccounted"] == 0
    assert doc["lines"] == sum(f["lines"] for f in doc["sources"]) == 317
    for f in doc["sources"]:
        assert {"source", "lines", "unaccounted", "rollouts", "counts"} <= set(f)
        assert sum(f["counts"].values()) == f["lines"]
    again = json.loads(
        run(
            "--root", str(tmp_path), "--json", "import", "claude-code", str(DATA / "claude-code")
        ).output
    )
    assert again["rollouts"] == []
    assert {f["status"] for f in again["sources"]} == {"unchanged"}


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    """--dry-run accounts for every line and writes no file."""
    result = run("--root", str(tmp_path / "r"), "import", "codex", "--dry-run", str(DATA / "codex"))
    assert result.exit_code == 0, result.output
    assert "(dry run)" in result.output
    assert not (tmp_path / "r").exists()


def test_sources_default_to_the_tools_directories(tmp_path: Path) -> None:
    """Without SOURCE, the tool's usual directory under HOME is read (the test's HOME); a
    missing one is a one-line error."""
    home = Path.home()
    missing = run("--root", str(tmp_path), "import", "codex")
    assert missing.exit_code == 1
    assert ".codex/sessions" in missing.output
    shutil.copytree(DATA / "claude-code" / "2.1.29-hook-stop", home / ".claude" / "projects" / "p")
    result = run("--root", str(tmp_path), "--json", "import", "claude-code")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["sources"]) == 3


def test_a_failed_file_sets_the_exit_status(tmp_path: Path) -> None:
    """A source file that could not be imported at all makes the exit status 1."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    result = run("--root", str(tmp_path / "r"), "import", "codex", str(tmp_path / "src"))
    assert result.exit_code == 1
    assert "could not read" in result.output
