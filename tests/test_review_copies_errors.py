"""The library's errors cross a process boundary as they were raised (ADR 0161): a process pool
or a Dask worker pickles the error a task raised, and the caller must get the same error, its
attributes and message included, not a pool broken by an error that cannot be rebuilt."""

from __future__ import annotations

import copy
import errno
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ledger import Message, RolloutWriter, StopKind
from ledger.codec import RecordDecodeError
from ledger.memory import MemoryWireError
from ledger.naming import RolloutNameError
from ledger.providers import LeftOutWarning, ProviderError
from ledger.validation import MISSING, InvalidFieldError
from ledger.writer_errors import (
    ForkError,
    ReadBackError,
    RolloutExistsError,
    RolloutFileError,
    WriterBusyError,
    WriterClosedError,
    WriterError,
    WriterFailedError,
)
from replay import ReplayTooLarge, read_replay
from replay._files import NotARegularFileError
from replay.cli._errors import CliError
from replay.fleet._store import StoreAccessError, StoreError
from replay.lookup import (
    AmbiguousSessionError,
    DuplicateSessionError,
    SessionLookupError,
    SessionNotFoundError,
)
from replay.trash import FileHeldError, TrashBusyError, TrashError


def _replay(tmp_path: Path) -> Any:
    with RolloutWriter.create(tmp_path, session_id="s") as w:
        w.append(Message(role="user", content="hello"))
        w.stop(StopKind.PAUSED)
    return read_replay(w.path)


def _samples(tmp_path: Path) -> list[BaseException]:
    root = Path("/r")
    return [
        InvalidFieldError("Message.role", 3, "a Role", "a hint"),
        InvalidFieldError("Message.role", MISSING, "a Role"),
        ProviderError("messages[0].role", "a role"),
        LeftOutWarning("left out"),
        RecordDecodeError("not a record"),
        RolloutNameError("not a name"),
        MemoryWireError("not the wire form"),
        WriterError("failed", tmp_path),
        WriterBusyError("busy", tmp_path),
        WriterFailedError("failed", tmp_path),
        WriterClosedError("closed"),
        RolloutExistsError("exists", tmp_path),
        RolloutFileError("no space", tmp_path, OSError(errno.ENOSPC, "No space left")),
        ReadBackError("read back", tmp_path),
        ForkError("fork", tmp_path),
        ReplayTooLarge(_replay(tmp_path), 1.5),
        SessionLookupError("lookup", root=root, query="q"),
        SessionNotFoundError("none", root=root, query="q"),
        AmbiguousSessionError("two", root=root, query="q", candidates=(("a", root / "a"),)),
        DuplicateSessionError(
            "twice", root=root, query="q", session_id="s", paths=(root / "a", root / "b")
        ),
        NotARegularFileError(tmp_path, "a directory"),
        TrashError(errno.ENOENT, "not in the trash", "x"),
        TrashBusyError(errno.EAGAIN, "busy", "x"),
        FileHeldError(errno.EBUSY, "held", "x"),
        StoreError("s3://b/k", "the store failed"),
        StoreAccessError("s3://b/k", "refused", code=errno.EACCES),
        CliError("bad", 2),
    ]


def _state(error: BaseException) -> tuple[Any, ...]:
    os_fields = (
        (error.errno, error.strerror, error.filename, error.filename2)
        if isinstance(error, OSError)
        else None
    )
    return type(error), error.args, str(error), os_fields, vars(error)


def test_every_error_pickles_and_copies_as_raised(tmp_path: Path) -> None:
    """Every error the library raises comes back from pickling (every protocol) and copying
    of the same type, with the same args, message, attributes and system error fields."""
    for error in _samples(tmp_path):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(error, protocol))  # noqa: S301 - our own bytes
            assert _state(back) == _state(error), (type(error).__name__, protocol)
        assert _state(copy.copy(error)) == _state(error)
        assert _state(copy.deepcopy(error)) == _state(error)


def test_every_error_of_the_library_is_sampled(tmp_path: Path) -> None:
    """A new error class of the library (of the modules imported here) is added to the samples
    above, so that it is pinned too."""

    def walk(cls: type) -> list[type]:
        return [cls, *(c for sub in cls.__subclasses__() for c in walk(sub))]

    ours = {
        cls
        for cls in walk(BaseException)
        if cls.__module__.split(".")[0] in ("ledger", "replay") and not cls.__name__.startswith("_")
    }
    assert ours <= {type(e) for e in _samples(tmp_path)}


def _over_budget(path: str) -> Any:
    return read_replay(path, token_budget=1)


def _refused(path: str) -> Any:
    raise InvalidFieldError("Message.role", path, "a Role")


def test_an_error_raised_in_a_process_pool_reaches_the_caller(tmp_path: Path) -> None:
    """``ReplayTooLarge`` raised in a worker process reaches the caller with its replay (the
    pool used to break: the error could not be rebuilt), and so does an ``InvalidFieldError``
    with its field."""
    rep = _replay(tmp_path)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(ReplayTooLarge) as over:
            pool.submit(_over_budget, str(rep.path)).result(timeout=120)
        assert over.value.replay == rep
        assert over.value.budget == 1
        with pytest.raises(InvalidFieldError) as refused:
            pool.submit(_refused, "x").result(timeout=120)
        assert refused.value.where == "Message.role"
        assert refused.value.given == "x"
