"""The fleet stays optional: the core's dependencies are unchanged, and nothing imports the
fleet's libraries before a URL, the index, SQL or a Dask job is used."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLEET_LIBRARIES = ("fsspec", "s3fs", "duckdb", "dask", "distributed", "botocore", "aiobotocore")


def _loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys\n{statement}\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FLEET_LIBRARIES!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout)  # noqa: S307 - our own subprocess prints a list of names


def test_the_core_keeps_its_dependencies_and_the_fleet_is_an_extra() -> None:
    """attrs, msgspec, click and rich at run time; fsspec, s3fs, duckdb and dask in `fleet`."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = sorted(d.split(">")[0].split("[")[0] for d in project["dependencies"])
    assert names == ["attrs", "click", "msgspec", "rich"]
    fleet = sorted(d.split(">")[0] for d in project["optional-dependencies"]["fleet"])
    assert fleet == ["dask[distributed]", "duckdb", "fsspec", "s3fs"]


def test_importing_the_library_and_the_command_loads_no_fleet_library() -> None:
    """`import ledger`, `import replay`, the command and `replay.fleet` itself load none of them."""
    assert _loaded_after("import ledger, replay") == []
    assert _loaded_after("import replay.cli") == []
    assert _loaded_after("import replay.fleet") == []


def test_local_reads_never_load_a_fleet_library(tmp_path: Path) -> None:
    """Listing and replaying local files does not import fsspec: only a URL does."""
    statement = (
        f"import replay\nreplay.list_sessions({str(tmp_path)!r})\nfrom replay.cli import main\n"
    )
    assert _loaded_after(statement) == []
    assert "fsspec" in _loaded_after("import replay.fleet as f; f.open_store('memory://x')")
