"""Decoding speed of the codec choices, measured on realistic rollout lines (ADR 0002).

Generates the lines of an agent session (user turns; assistant turns with reasoning blocks and
tool calls; tool outputs of a few KB), once ASCII-only and once with mixed CJK text, encodes
them with the library's own encoder, and times decoding every line, in one run, with:

  (a) ``json.loads`` per line (dicts, no types, no validation)
  (b) msgspec typed decode into the record union (``ledger.codec.decode_record``)
  (c) msgspec untyped decode per line (dicts, no types)
  (d) ``json.loads`` + cattrs structuring into equivalent attrs classes
  (e) msgspec typed ``Decoder(Record).decode_lines`` on chunks of whole lines (4 MiB)
  (f) ``ledger.reader.iter_batches`` over the same bytes in memory: the reader's real path
      (chunked ``decode_lines``, line numbering, per-line fallback on damage), no reducer

Each variant's time is the median of interleaved rounds (ADR 0060). Ratios are times relative
to (b): ``2.0x`` means twice as slow as (b).

    .venv/bin/python benchmarks/decode_choices.py [--lines N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

import msgspec

from ledger import decode_record
from ledger.reader import CHUNK_BYTES, iter_batches
from ledger.records import MessageRecord, ReasoningRecord, Record

if not __package__:  # run as a file: make the ``benchmarks`` package beside it importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.decode_lines import session_lines
from benchmarks.decode_mirrors import (
    ARECORD,
    AMessageRecord,
    AReasoningRecord,
    ATextPart,
    cattrs_converter,
)

# --- timing ----------------------------------------------------------------------------------


def _interleaved_medians(
    repeat: int, variants: Sequence[tuple[str, Callable[[], object]]]
) -> list[tuple[str, float]]:
    """Median time of each variant over ``repeat`` rounds; each round runs every variant once,
    in an order rotated by one per round, so that a slow moment on a shared machine hits all
    variants alike (the method of ADR 0060)."""
    times: list[list[float]] = [[] for _ in variants]
    n = len(variants)
    for r in range(repeat):
        for k in range(n):
            i = (k + r) % n
            gc.collect()
            t = time.perf_counter()
            variants[i][1]()
            times[i].append(time.perf_counter() - t)
    return [(name, statistics.median(ts)) for (name, _), ts in zip(variants, times, strict=True)]


def _variants(lines: Sequence[bytes]) -> list[tuple[str, Callable[[], object]]]:
    loads = json.loads
    untyped = msgspec.json.Decoder().decode
    typed_lines = msgspec.json.Decoder(Record).decode_lines
    data = b"".join(lines)
    chunks = _chunks(data, CHUNK_BYTES)
    converter = cattrs_converter()
    structure = converter.structure

    def a() -> object:
        return [loads(x) for x in lines]

    def b() -> object:
        return [decode_record(x) for x in lines]

    def c() -> object:
        return [untyped(x) for x in lines]

    def d() -> object:
        return [structure(loads(x), ARECORD) for x in lines]

    def e() -> object:
        return [typed_lines(chunk) for chunk in chunks]

    def f() -> object:
        return list(iter_batches(io.BytesIO(data)))

    return [
        ("(a) json.loads per line", a),
        ("(b) msgspec typed (decode_record)", b),
        ("(c) msgspec untyped", c),
        ("(d) json.loads + cattrs -> attrs", d),
        ("(e) msgspec typed decode_lines", e),
        ("(f) ledger.reader.iter_batches", f),
    ]


def _chunks(data: bytes, size: int) -> list[bytes]:
    """Cut ``data`` into pieces of about ``size`` bytes, each ending at a line end."""
    out = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + size)
        end = len(data) if end < 0 else end + 1
        out.append(data[start:end])
        start = end
    return out


def _check_equivalent(lines: Sequence[bytes]) -> None:
    """Refuse to report figures unless (b) and (d) read the same content from every line."""
    converter = cattrs_converter()
    for raw in lines:
        typed = decode_record(raw)
        mirror = converter.structure(json.loads(raw), ARECORD)
        assert mirror.seq == typed.seq, raw[:80]
        if isinstance(typed, MessageRecord):
            assert isinstance(mirror, AMessageRecord)
            m, am = typed.message, mirror.message
            assert (m.role.value, len(m.tool_calls)) == (am.role.value, len(am.tool_calls))
            assert m.text() == (
                am.content
                if isinstance(am.content, str)
                else "".join(p.text for p in am.content or () if isinstance(p, ATextPart))
            )
        elif isinstance(typed, ReasoningRecord):
            assert isinstance(mirror, AReasoningRecord)
            assert typed.reasoning.signature == mirror.reasoning.signature
            assert typed.reasoning.encrypted == mirror.reasoning.encrypted


def run(n_lines: int, repeat: int, seed: int) -> None:
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
        f"msgspec {version('msgspec')}, cattrs {version('cattrs')}, attrs {version('attrs')}"
    )
    print(
        f"{n_lines} lines per run, median of {repeat} interleaved rounds; "
        "ratio = time / time of (b)\n"
    )
    for label, cjk in (("ASCII-only", False), ("mixed CJK", True)):
        lines = session_lines(random.Random(seed), n_lines, cjk)
        _check_equivalent(lines)
        size = sum(len(x) for x in lines)
        print(f"{label}: {size / 1e6:.1f} MB, mean line {size / len(lines) / 1e3:.1f} KB")
        timings = _interleaved_medians(repeat, _variants(lines))
        base = timings[1][1]
        print(f"  {'variant':<36}{'seconds':>9}{'MB/s':>9}{'ratio':>8}")
        for name, t in timings:
            print(f"  {name:<36}{t:>9.3f}{size / t / 1e6:>9.0f}{t / base:>7.2f}x")
        print()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--lines", type=int, default=12000, help="records per run (default 12000)")
    parser.add_argument(
        "--repeat", type=int, default=7, help="interleaved rounds; the median is kept"
    )
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args(argv)
    run(args.lines, args.repeat, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
