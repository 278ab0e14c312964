"""The benchmark: the library beside its peers and the floor, as ratios taken in one run.

    make bench                      # full run (installs the bench extra on first use)
    make bench BENCH_ARGS=--quick   # small sizes, a fast check
    .venv/bin/python -m benchmarks.run [--quick] [--only write,resume,...] [--no-profile]

Prints one table and writes ``benchmarks/results/latest.json``. Generated data is cached under
``benchmarks/data/`` (both gitignored). Method, peers and floors: ADR 0060 and the README.

This module holds the command line, the JSON file and the call of the regression guard; each
section is a module of its own (``bench_*.py``, ``importing.py``, ``fleet.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import datasets, guard, importing, peers
from benchmarks.bench_memory import child_memory, section_memory
from benchmarks.bench_resume import section_resume
from benchmarks.bench_scaling import section_scaling
from benchmarks.bench_stop import section_stop
from benchmarks.bench_write import section_write
from benchmarks.config import FULL, QUICK, Config
from benchmarks.library import Library
from benchmarks.profiling import profile_missed
from benchmarks.report import Report, Row, header, status_of

RESULTS = Path(__file__).resolve().parent / "results"

SECTIONS = ("write", "resume", "stop", "memory", "scaling", "import", "fleet")


# --- import and fleet: their rows come from importing.py and fleet.py -----------------------------


def section_import(cfg: Config, rep: Report, work: Path) -> None:
    """Codex and Claude Code files imported, against json.loads (benchmarks/importing.py)."""

    def add(
        section: str, case: str, value: str, vs: str, r: float, goal: str, ok: bool | None
    ) -> None:
        rep.add(Row(section, case, value, vs, r, goal, "info" if ok is None else status_of(ok)))
        if ok is False:
            rep.missed.append(f"{section}: {case}")

    rep.raw["import"] = importing.section_import(cfg.quick, add, work)


def section_fleet(cfg: Config, rep: Report) -> None:
    """The object-storage rows (benchmarks/fleet.py)."""
    from benchmarks.fleet import run_fleet

    def add(
        case: str, value: str, vs: str, ratio: float | None, goal: str, ok: bool | None
    ) -> None:
        status = "info" if ok is None else status_of(ok)
        rep.add(Row("fleet", case, value, vs, ratio, goal, status))
        if ok is False:
            rep.missed.append(f"fleet: {case}")

    run_fleet(cfg.quick, add, rep.raw)


# --- main ----------------------------------------------------------------------------------------


def environment(cfg: Config, lib: Library) -> dict[str, Any]:
    try:
        commit = subprocess.run(
            [shutil.which("git") or "/usr/bin/git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if cfg.quick else "full",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "commit": commit,
        "versions": peers.peer_versions(),
        "library_missing": lib.missing,
        "config": asdict(cfg),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="small sizes: a fast check")
    ap.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections among {','.join(SECTIONS)}",
    )
    ap.add_argument("--no-profile", action="store_true", help="skip profiling missed goals")
    ap.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    ap.add_argument(
        "--save-baseline",
        action="store_true",
        help="replace this mode's committed baseline (benchmarks/results/baseline.json)",
    )
    ap.add_argument("--child-memory", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_memory:
        child_memory(args.child_memory)
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {sorted(unknown)}: choose among {', '.join(SECTIONS)}")
    cfg = QUICK if args.quick else FULL
    lib = Library()
    rep = Report()
    env = environment(cfg, lib)
    print(
        f"rollout-ledger benchmark ({env['mode']}), Python {env['python']}, {env['cpus']} cpus, "
        f"commit {env['commit'] or '?'}"
    )
    for name, why in lib.missing.items():
        print(f"  not available: {name} ({why})")
    print("ratios compare cases measured in this run; medians of interleaved repetitions\n")
    print(header())
    datasets.data_root().mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=datasets.data_root(), prefix="tmp-") as tmp:
        work = Path(tmp)
        runners: dict[str, Callable[[], None]] = {
            "write": lambda: section_write(cfg, lib, rep, work),
            "resume": lambda: section_resume(cfg, lib, rep),
            "stop": lambda: section_stop(cfg, lib, rep),
            "memory": lambda: section_memory(cfg, lib, rep),
            "scaling": lambda: section_scaling(cfg, lib, rep, work),
            "import": lambda: section_import(cfg, rep, work),
            "fleet": lambda: section_fleet(cfg, rep),
        }
        for s in only:
            t0 = time.perf_counter()
            try:
                runners[s]()
            except Exception as exc:  # one broken section must not lose the others' figures
                rep.errors[s] = traceback.format_exc()
                rep.add(Row(s, "section failed", f"{type(exc).__name__}: {exc}", status="ERROR"))
            rep.raw.setdefault("section_seconds", {})[s] = time.perf_counter() - t0
        if rep.missed and not args.no_profile:
            try:
                profile_missed(cfg, lib, rep, work)
            except Exception:  # a profile is a diagnosis; the figures above stand without it
                rep.errors["profile"] = traceback.format_exc()
    elapsed = time.perf_counter() - t_start
    print(f"\nmissed goals: {', '.join(rep.missed) or 'none'}; took {elapsed:.0f} s")
    for name, tb in rep.errors.items():
        print(f"\nsection {name} failed:\n{tb}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "environment": env,
        "elapsed_s": elapsed,
        "rows": [asdict(r) for r in rep.rows],
        "missed": rep.missed,
        "errors": rep.errors,
        "raw": rep.raw,
        "profiles": rep.profiles,
    }
    args.out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")
    _guard(rep, env, save=args.save_baseline, partial=set(only) != set(SECTIONS))
    return 0


def _guard(rep: Report, env: dict[str, Any], *, save: bool, partial: bool) -> None:
    """Print which goals moved since the committed baseline of this mode (ADR 0066)."""
    path = RESULTS / "baseline.json"
    mode = env["mode"]
    goals = guard.goals_of(rep.rows)
    baseline = guard.load_baseline(path, mode)
    if save:
        guard.save_baseline(path, mode, goals, env)
        print(f"saved the {mode} baseline in {path.name} ({len(goals)} goals)")
    if baseline is None:
        print(f"\nno {mode} baseline in {path.name}: nothing to compare with")
        return
    moved = guard.compare(goals, baseline)
    if partial:  # sections not run are not regressions
        moved = [m for m in moved if m.what != "not measured in this run"]
    when = baseline.get("environment", {}).get("commit") or "?"
    if not moved:
        print(f"\nno goal moved since the {mode} baseline (commit {when})")
        return
    print(f"\ngoals moved since the {mode} baseline (commit {when}):")
    for m in moved:
        print(m)


if __name__ == "__main__":
    sys.exit(main())
