"""The long mode of the fault campaigns: break the ledger on purpose, many times, and count.

    make torture                                   # the defaults below
    .venv/bin/python benchmarks/torture.py --trials 200 --flips 4 --stateful 200 --huge-mb 200

Runs, at full size, the campaigns that CI runs small (``tests/test_faults_*.py``,
``tests/test_stateful.py``): the kill -9 campaign, every truncation point and every single-bit
flip of several rollouts, random splices, the stateful writer model with longer runs, and one
real line of ``--huge-mb`` megabytes. Prints what was tried and what was lost (which must be 0)
and exits non-zero if any campaign failed. ADR 0050 states what is guaranteed.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402
from msgspec.json import encode  # noqa: E402

import fault_child  # noqa: E402 - the test helpers live beside the tests
import test_faults_damage as damage  # noqa: E402
import test_faults_kill as kill  # noqa: E402
from ledger import DegradationKind, Message, Role, StopKind, encode_line  # noqa: E402
from ledger.reader import rebuild  # noqa: E402
from ledger.records import MessageRecord  # noqa: E402
from ledger.writer import RolloutWriter  # noqa: E402
from replay import read_replay, read_stop_facts  # noqa: E402
from strategies import FAULT_START, fault_rollout_lines  # noqa: E402
from test_stateful import WriterMachine  # noqa: E402


def campaign_kill(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """SIGKILL writers at random moments; count acknowledged and lost records."""
    with tempfile.TemporaryDirectory(prefix="torture-kill-") as d:
        return kill.kill_campaign(args.trials, Path(d), rng)


def rollouts(rng: random.Random, n: int) -> list[list[bytes]]:
    """The damage corpus's rollout plus ``n`` others built from the kill child's messages."""
    out = [damage.LINES]
    for k in range(n):
        seed = rng.randrange(1 << 30)
        # Small messages only: every flip re-reads the whole rollout.
        msgs = [m for m in fault_child.messages(seed, 0, 30) if len(encode(m)) < 300][:8]
        out.append(fault_rollout_lines(msgs, session_id=f"t{k}", stop=StopKind.COMPLETED))
    return out


def campaign_truncations(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """Every truncation point of several rollouts."""
    counts: Counter[str] = Counter()
    for lines in rollouts(rng, args.flips):
        counts.update(damage.truncation_campaign(lines))
    return counts


def campaign_flips(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """Every single-bit flip of several rollouts."""
    counts: Counter[str] = Counter()
    for lines in rollouts(rng, args.flips):
        counts.update(damage.bitflip_campaign(lines))
    return counts


def campaign_splices(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """Random deletions, repetitions and overwrites of byte ranges; read in random chunk sizes."""
    counts: Counter[str] = Counter()
    data = damage.DATA
    n = len(data)
    for _ in range(args.splices):
        a = rng.randrange(n + 1)
        b = rng.randrange(a, n + 1)
        how = rng.choice(("delete", "repeat", "overwrite", "insert"))
        if how == "delete":
            mutated = data[:a] + data[b:]
        elif how == "repeat":
            mutated = data[:b] + data[a:b] + data[b:]
        elif how == "overwrite":
            mutated = data[:a] + rng.randbytes(b - a) + data[b:]
        else:
            mutated = data[:a] + rng.randbytes(rng.randrange(1, 64)) + data[a:]
        want = damage.summary(damage.read(mutated, max_line_bytes=512))
        chunk = rng.choice((1, 2, 3, 7, 64, 1000))
        got = damage.summary(damage.read_chunked(mutated, chunk, max_line_bytes=512))
        counts["inputs"] += 1
        if got != want:
            counts["chunking changed the result"] += 1
            raise AssertionError(f"{how} {a}:{b} read differently in chunks of {chunk}")
        state = damage.read(mutated)
        damage.assert_lines_named(state, mutated.count(b"\n") + 1)
        if damage.verified(state):
            counts["verified"] += 1
            assert damage.unanchored(state.at_checkpoint) == damage.unanchored(
                damage.CONVERSATION
            ), f"{how} {a}:{b}: verified over a different conversation"
        counts["degraded" if state.degraded else "clean"] += 1
    return counts


def campaign_stateful(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """The stateful writer model with many more and longer runs than CI."""
    run_state_machine_as_test(
        WriterMachine,
        settings=settings(
            max_examples=args.stateful,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
    return Counter({"runs": args.stateful, "steps per run (max)": 40})


def campaign_huge_line(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """One real message line of ``--huge-mb`` MB: replayed and verified, or skipped when capped."""
    counts: Counter[str] = Counter()
    if args.huge_mb <= 0:
        return counts
    with tempfile.TemporaryDirectory(prefix="torture-huge-") as d:
        with RolloutWriter.create(d, agent_name="huge") as w:
            w.append(Message(role=Role.USER, content="before"))
            w.append(Message(role=Role.TOOL, tool_call_id="c", content="x" * (args.huge_mb << 20)))
            w.append(Message(role=Role.USER, content="after"))
            w.stop(StopKind.PAUSED)
        size = w.path.stat().st_size
        counts["file bytes"] = size
        t = time.perf_counter()
        facts = read_stop_facts(w.path)
        counts["stop facts bytes scanned"] = facts.bytes_scanned
        assert facts.kind == StopKind.PAUSED
        rep = read_replay(w.path)
        counts["replay seconds x1000"] = int((time.perf_counter() - t) * 1000)
        assert rep.verified, rep.degraded
        assert len(rep.messages) == 3
        counts["verified"] += 1
        capped = rebuild(w.path, max_line_bytes=1 << 20)
        assert [d.kind for d in capped.degraded] == [DegradationKind.LINE_TOO_LONG]
        counts["skipped when over max_line_bytes"] += 1
    return counts


def campaign_deep(args: argparse.Namespace, rng: random.Random) -> Counter[str]:
    """Nesting of many depths inside every kind of record position."""
    counts: Counter[str] = Counter()
    meta = damage.LINES[0]
    for depth in (10, 100, 1_000, 5_000, 10_000, 100_000):
        for opener, closer in ((b"[", b"]"), (b'{"a":', b"}")):
            nest = opener * depth + (b"1" if opener != b"[" else b"") + closer * depth
            for line in (
                nest + b"\n",
                b'{"type":"future","seq":2,"x":' + nest + b"}\n",
                encode_line(
                    MessageRecord(
                        seq=2,
                        ts=FAULT_START,
                        message=Message(role=Role.USER, content="x"),
                    )
                ).replace(b'"content":"x"', b'"content":"x","extra":' + nest),
            ):
                state = damage.read(meta + line)
                counts["inputs"] += 1
                counts["degraded" if state.degraded else "read"] += 1
    return counts


CAMPAIGNS: dict[str, Callable[[argparse.Namespace, random.Random], Counter[str]]] = {
    "kill -9": campaign_kill,
    "truncations": campaign_truncations,
    "bit flips": campaign_flips,
    "splices": campaign_splices,
    "deep nesting": campaign_deep,
    "huge line": campaign_huge_line,
    "stateful": campaign_stateful,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="kill -9 trials (files)")
    parser.add_argument("--flips", type=int, default=3, help="extra rollouts to flip and cut")
    parser.add_argument("--splices", type=int, default=20_000, help="random splices")
    parser.add_argument("--stateful", type=int, default=200, help="stateful model runs")
    parser.add_argument("--huge-mb", type=int, default=200, help="size of the one huge line")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", default="", help="comma-separated campaign names")
    args = parser.parse_args(argv)
    # Repairs are expected by the thousand here; they are counted, not logged.
    logging.getLogger("ledger.writer").setLevel(logging.ERROR)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    print(f"torture seed {seed}")
    failed = 0
    for name, run in CAMPAIGNS.items():
        if only and name not in only:
            continue
        rng = random.Random(f"{seed}:{name}")
        t = time.perf_counter()
        try:
            counts = run(args, rng)
            status = "ok"
        except Exception:
            counts = Counter()
            status = "FAILED"
            failed += 1
            traceback.print_exc()
        took = time.perf_counter() - t
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        print(f"{name:>12} {status:6} {took:7.1f}s  {shown}", flush=True)
    print("all campaigns passed" if not failed else f"{failed} campaign(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
