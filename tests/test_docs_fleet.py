"""docs/fleet.md is a tour that runs: every `rollout` line and every `python tour` block, in
order, against a local S3 server, from a fresh home."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import fsspec
import pytest
from click.testing import CliRunner

from replay.cli import cli
from replay.fleet.testing import LocalS3

PAGE = Path(__file__).resolve().parents[1] / "docs" / "fleet.md"
_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_SHELL_WORDS = frozenset({">", ">>", "2>", "|", "&&", "||", ";"})
BUCKET = "acme-rollouts"


def steps() -> list[tuple[str, Any]]:
    """``("sh", argv)`` per `rollout` line and ``("python", code)`` per tour block, in order."""
    out: list[tuple[str, Any]] = []
    text = PAGE.read_text(encoding="utf-8")
    for m in _FENCE.finditer(text):
        info = m["info"].strip()
        if info == "python tour":
            out.append(("python", m["body"]))
        elif info == "sh":
            for raw in m["body"].splitlines():
                line = raw.split("  #", 1)[0].strip()
                if line.startswith("rollout "):
                    words = shlex.split(line)[1:]
                    cut = next((i for i, w in enumerate(words) if w in _SHELL_WORDS), len(words))
                    out.append(("sh", words[:cut]))
    return out


def test_the_tour_covers_ship_index_sql_and_python() -> None:
    """The page has the commands it promises, and at least one Python block."""
    kinds = [k for k, _ in steps()]
    commands = {s[0] if s[0] != "--root" else s[2] for k, s in steps() if k == "sh"}
    assert {"demo", "ship", "ls", "index", "sql", "verify"} <= commands
    assert "python" in kinds


def test_the_fleet_tour_runs(
    s3_env: LocalS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step succeeds in turn: demo, ship, ls, index, sql, the Python block."""
    fs = fsspec.filesystem("s3")
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for kind, step in steps():
        if kind == "python":
            exec(compile(step, str(PAGE), "exec"), {"__name__": "__docs__"})  # noqa: S102
            continue
        # The page shows a typical endpoint; the test's server listens on a free port.
        argv = [w.replace("http://127.0.0.1:9000", s3_env.endpoint) for w in step]
        result = runner.invoke(cli, argv, prog_name="rollout")
        assert result.exit_code == 0, (argv, result.output)
    listed = runner.invoke(cli, ["ls", "--json", "--root", f"s3://{BUCKET}/team-a"])
    assert '"from_index":2' in listed.output
