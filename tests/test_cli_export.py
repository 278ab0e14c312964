"""`rollout export`: the command writes the page the library renders, never over a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger import Message, Role, RolloutWriter, StopKind
from replay.cli import cli


def _session(root: Path) -> RolloutWriter:
    w = RolloutWriter.create(root, session_id="exported")
    w.append(Message(role=Role.USER, content="<script>document.title='x'</script> hello"))
    w.stop(StopKind.PAUSED)
    w.close()
    return w


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_export_writes_the_page_named_by_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """`rollout export ID --format F` writes <id>.<F> in the current directory; markup from the
    file is escaped in HTML (in Markdown it sits in a code block)."""
    _session(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["--root", "root", "export", "exported", "--format", fmt])
    assert result.exit_code == 0, result.output
    page = (tmp_path / f"exported.{fmt}").read_text()
    assert "hello" in page
    if fmt == "html":
        assert "<script>document.title" not in page


def test_export_never_overwrites_an_unnamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without -o an existing page is not overwritten: exit 1 and a one-line reason."""
    _session(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exported.html").write_text("mine")
    result = CliRunner().invoke(cli, ["--root", "root", "export", "exported"])
    assert result.exit_code == 1
    assert "already exists" in result.output
    assert (tmp_path / "exported.html").read_text() == "mine"


def test_export_to_standard_output(tmp_path: Path) -> None:
    """`-o -` prints the page."""
    _session(tmp_path)
    result = CliRunner().invoke(
        cli, ["--root", str(tmp_path), "export", "exported", "--format", "md", "-o", "-"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# Session")
