"""Fleet-wide work on Dask: verifying and indexing every object, one task per batch of objects.

``scheduler`` says where the tasks run: ``None`` in this process (a few threads, to hide the
store's latency), ``"local"`` on a ``dask.distributed.LocalCluster`` started for the job (one
worker process per core: decoding and digesting hold the GIL), or the address of a running
scheduler (``tcp://host:8786``). Every path computes the same results, in the same order: a
task is a plain function of plain values, which opens the store itself with the options it is
given (ADR 0144).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

from replay.fleet._store import ObjectInfo, storage_options

__all__ = ["BATCH_BYTES", "BATCH_OBJECTS", "batches", "run_batches", "verify_batch"]

BATCH_OBJECTS: Final = 32
BATCH_BYTES: Final = 64 * 1024 * 1024
_THREADS: Final = 8

T = TypeVar("T")


def batches(infos: Sequence[ObjectInfo], *, objects: int = BATCH_OBJECTS) -> list[list[ObjectInfo]]:
    """``infos`` cut into batches of at most ``objects`` objects and about 64 MiB."""
    out: list[list[ObjectInfo]] = []
    current: list[ObjectInfo] = []
    size = 0
    for info in infos:
        if current and (len(current) >= objects or size + info.size > BATCH_BYTES):
            out.append(current)
            current, size = [], 0
        current.append(info)
        size += info.size
    if current:
        out.append(current)
    return out


@contextlib.contextmanager
def _client(scheduler: str) -> Iterator[Any]:
    try:
        import dask.distributed
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "fleet jobs on Dask need the fleet extra: pip install 'rollout-ledger[fleet]'"
        ) from exc
    # dask ships no type information: its two classes are used as untyped callables.
    client_cls: Any = dask.distributed.Client
    cluster_cls: Any = dask.distributed.LocalCluster
    if scheduler == "local":
        with (
            cluster_cls(threads_per_worker=1, dashboard_address=":0") as cluster,
            client_cls(cluster) as client,
        ):
            yield client
    else:
        with client_cls(scheduler) as client:
            yield client


def run_batches(
    task: Callable[..., T],
    url: str,
    options: Mapping[str, Any],
    work: Sequence[Sequence[Any]],
    *extra: Any,
    scheduler: str | None = None,
) -> list[T]:
    """``task(url, options, batch, *extra)`` for every batch, in order, where ``scheduler`` says."""
    if not work:
        return []
    if scheduler is None:
        with storage_options(**options), ThreadPoolExecutor(_THREADS) as pool:
            return list(pool.map(lambda b: task(url, options, b, *extra), work))
    with _client(scheduler) as client:
        futures = client.map(task, [url] * len(work), [options] * len(work), work,
                             *[[e] * len(work) for e in extra], pure=False)  # fmt: skip
        return list(client.gather(futures))


def verify_batch(
    url: str, options: Mapping[str, Any], infos: Sequence[ObjectInfo]
) -> list[dict[str, Any]]:
    """The verdict of every object of a batch, as plain values (``verify --json``'s fields)."""
    from replay.replay import read_replay
    from replay.verdict import verify_replay

    out: list[dict[str, Any]] = []
    with storage_options(**options):
        for info in infos:
            try:
                rep = read_replay(str(info.url), whole_file=True)
            except PermissionError:
                raise
            except OSError as exc:
                why = f"cannot read the object: {exc.strerror or exc}"
                out.append({"url": str(info.url), "session_id": None, "status": "failed",
                            "verified": False, "digest": None, "messages": None,
                            "checkpoint_messages": None, "degraded": [], "problems": [why],
                            "error": why})  # fmt: skip
                continue
            v = verify_replay(rep)
            cp = rep.checkpoint
            out.append(
                {
                    "url": str(info.url),
                    "session_id": rep.session_id,
                    "status": str(v.verdict),
                    "verified": rep.verified,
                    "digest": cp.digest if cp is not None else None,
                    "messages": rep.total_messages,
                    "checkpoint_messages": cp.message_count if cp is not None else None,
                    "degraded": [
                        {"kind": str(d.kind), "detail": d.detail, "line": d.line, "seq": d.seq}
                        for d in rep.degraded
                    ],
                    "problems": [str(r) for r in v.reasons],
                    "error": None,
                }
            )
    return out
