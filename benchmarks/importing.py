"""The import benchmark: Codex and Claude Code files imported, against json.loads of the same
file, and the memory peak of importing a large tree (SPEC section 5).

    .venv/bin/python -m benchmarks.run --only import          # the table rows
    .venv/bin/python -m benchmarks.importing --tree-mb 1024   # memory over a generated tree

Sources are grown from the real samples in tests/data/import: their conversation lines repeated,
with ids made unique per repetition so that every response and call stays distinct.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO / "tests" / "data" / "import"
CODEX_SEED = next((SEEDS / "codex" / "0.40.0-vscode-turn-aborted").rglob("*.jsonl"))
CLAUDE_SEED = (
    SEEDS / "claude-code" / "2.1.7-task-subagent" / "incremental-subagents" / "turn-2.jsonl"
)
MB = 1 << 20

__all__ = ["grow_claude", "grow_codex", "section_import"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def grow_codex(target: int, out: Path) -> Path:
    """A Codex rollout of about ``target`` bytes: the seed's lines after its session_meta,
    repeated, with call ids made unique per repetition."""
    seed = _lines(CODEX_SEED)
    head, body = seed[0], seed[1:]
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(head) + "\n")
        k = 0
        while f.tell() < target:
            for o in body:
                p = o.get("payload")
                if isinstance(p, dict) and "call_id" in p:
                    o = {**o, "payload": {**p, "call_id": f"{p['call_id']}-{k}"}}
                f.write(json.dumps(o) + "\n")
            k += 1
    return out


def grow_claude(target: int, out: Path, session: str = "bench-session") -> Path:
    """A Claude Code transcript of about ``target`` bytes: the seed's lines repeated, with
    uuids, message ids and tool ids suffixed per repetition and each repetition chained to the
    one before (one path to the last message)."""
    seed = [o for o in _lines(CLAUDE_SEED) if o.get("type") in ("user", "assistant", "system")]
    last_uuid: str | None = None
    with open(out, "w", encoding="utf-8") as f:
        k = 0
        while f.tell() < target:
            for i, o in enumerate(seed):
                o = json.loads(json.dumps(o))
                o["sessionId"] = session
                o["uuid"] = f"{o['uuid']}-{k}"
                parent = o.get("parentUuid")
                o["parentUuid"] = f"{parent}-{k}" if parent and i else last_uuid
                m = o.get("message")
                if isinstance(m, dict):
                    if "id" in m:
                        m["id"] = f"{m['id']}-{k}"
                    for b in m.get("content") if isinstance(m.get("content"), list) else []:
                        for key in ("id", "tool_use_id"):
                            if key in b:
                                b[key] = f"{b[key]}-{k}"
                f.write(json.dumps(o) + "\n")
                last_uuid = o["uuid"]
            k += 1
    return out


def json_loads_seconds(path: Path) -> float:
    """json.loads of every line of the file read from disk: the baseline."""
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                json.loads(line)
    return time.perf_counter() - t0


def import_seconds(tool: str, path: Path, work: Path) -> float:
    """Import one file into a fresh root (a new import each time), the root removed after."""
    from ledger.importers import claude_code, codex

    module = claude_code if tool == "claude-code" else codex
    root = Path(tempfile.mkdtemp(dir=work, prefix="root-"))
    t0 = time.perf_counter()
    report = module.import_sessions(path, root)
    elapsed = time.perf_counter() - t0
    assert report.unaccounted == 0, report.to_json()
    shutil.rmtree(root)
    return elapsed


def _sources(work: Path, sizes: tuple[int, ...]) -> Iterator[tuple[str, int, Path]]:
    for mb in sizes:
        yield "codex", mb, grow_codex(mb * MB, work / f"codex-{mb}.jsonl")
        yield "claude-code", mb, grow_claude(mb * MB, work / f"claude-{mb}.jsonl")


def import_split(tool: str, path: Path, work: Path) -> tuple[float, float, float]:
    """One more import, timed whole and in two of its parts: ``(whole, parse, read_back)``,
    where ``parse`` is reading and parsing the source and ``read_back`` the stop's reading back
    of the rollouts it wrote (SPEC rule 1; the drain before it is left out, since how far the
    writes lag behind depends on the conversion). Every import does both, whatever its
    conversion costs (ADR 0163)."""
    from ledger import writer_stop
    from ledger.importers import _run

    spent = {"parse": 0.0, "read_back": 0.0}

    def timing(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - t0

        return timed

    with (
        mock.patch.object(_run, "read_source", timing("parse", _run.read_source)),
        mock.patch.object(writer_stop, "read_back", timing("read_back", writer_stop.read_back)),
    ):
        whole = import_seconds(tool, path, work)
    return whole, spent["parse"], spent["read_back"]


def section_import(
    quick: bool, add: Callable[[str, str, str, str, float, str, bool | None], None], work: Path
) -> dict[str, Any]:
    """Rows: MB/s of source imported, against json.loads of the same file (goal >= 0.5x)."""
    sizes = (1, 4) if quick else (1, 20)
    repeat = 2 if quick else 3
    raw: dict[str, Any] = {}
    for tool, mb, path in _sources(work, sizes):
        size = path.stat().st_size
        base, lib = [], []
        for _ in range(repeat):  # interleaved, so that load on the machine hits both alike
            base.append(json_loads_seconds(path))
            lib.append(import_seconds(tool, path, work))
        b, t = sorted(base)[len(base) // 2], sorted(lib)[len(lib) // 2]
        ratio = b / t
        raw[f"{tool}-{mb}MB"] = {"bytes": size, "json_loads_s": base, "import_s": lib}
        add(
            "import",
            f"{tool} {mb} MB",  # the case names what is measured, never the figure
            f"{size / t / MB:.1f} MB/s (json.loads {size / b / MB:.1f})",
            "x json.loads' speed",
            ratio,
            ">= 0.5",
            ratio >= 0.5,
        )
        splits = sorted(
            (import_split(tool, path, work) for _ in range(repeat)), key=lambda s: s[1] + s[2]
        )
        whole, parse, back = splits[len(splits) // 2]
        raw[f"{tool}-{mb}MB"]["split_s"] = [
            {"whole": w, "parse": p, "read_back": r} for w, p, r in splits
        ]
        add(
            "import",
            "  ceiling: parse + read-back, no conversion",
            f"{parse * 1e3:.0f} + {back * 1e3:.0f} of {whole * 1e3:.0f} ms",
            "x json.loads' speed",
            b / (parse + back),
            "info",
            None,
        )
    return raw


# --- memory over a large tree ------------------------------------------------------------------


def make_tree(root: Path, total_mb: int, file_mb: int = 16) -> Path:
    """A Codex sessions tree of about ``total_mb``: copies of one grown rollout with distinct
    session ids, in date folders."""
    root.mkdir(parents=True, exist_ok=True)
    one = grow_codex(file_mb * MB, root / "seed.tmp")
    data = one.read_bytes()
    first, rest = data.split(b"\n", 1)
    head = json.loads(first)
    for i in range(max(1, total_mb // file_mb)):
        head["payload"]["id"] = f"tree-{i:05d}"
        day = root / "2026" / "01" / f"{1 + i % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        (day / f"rollout-{i:05d}.jsonl").write_bytes(json.dumps(head).encode() + b"\n" + rest)
    one.unlink()
    return root


def _child(tree: str, out: str) -> None:
    from ledger.importers import codex

    report = codex.import_sessions(tree, out)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "peak_kib": peak_kib,
                "files": len(report.files),
                "lines": report.lines,
                "unaccounted": report.unaccounted,
            }
        )
    )


def measure_tree(total_mb: int, work: Path) -> dict[str, Any]:
    """Peak RSS of a fresh process importing a tree of ``total_mb``."""
    tree = make_tree(work / f"tree-{total_mb}", total_mb)
    out = work / f"out-{total_mb}"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.importing", "--child", str(tree), str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["seconds"] = time.perf_counter() - t0
    result["tree_mb"] = total_mb
    shutil.rmtree(tree)
    shutil.rmtree(out)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.importing", description=__doc__)
    ap.add_argument("--tree-mb", type=int, nargs="*", default=[64, 1024])
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    base = Path(os.environ.get("BENCH_DATA", REPO / "benchmarks" / "data"))
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="import-") as tmp:
        for mb in args.tree_mb:
            r = measure_tree(mb, Path(tmp))
            print(
                f"tree {r['tree_mb']} MB: {r['files']} files, {r['lines']} lines, "
                f"unaccounted {r['unaccounted']}, peak RSS {r['peak_kib'] / 1024:.0f} MiB, "
                f"{r['seconds']:.0f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
