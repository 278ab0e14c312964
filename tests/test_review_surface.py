"""The splits of the writer, the listing, the value checks and the Codex importer into modules
of their own change no public face: every name is importable where it was, and the writer's
methods, classmethods and properties keep their kinds and signatures, as they stood before."""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
from pathlib import Path

import pytest

from ledger import Message, Role, RolloutWriter, StopKind
from ledger.reader import rebuild

# The ``__all__`` of each module split, as it stood before the split.
_NAMES_BEFORE = {
    "ledger.writer": [
        "FILE_MODE",
        "MAX_BATCH_DELAY",
        "MAX_BATCH_RECORDS",
        "Durability",
        "ForkError",
        "ReadBackError",
        "RolloutExistsError",
        "RolloutWriter",
        "TailRepair",
        "WriterBusyError",
        "WriterClosedError",
        "WriterError",
        "WriterFailedError",
    ],
    "ledger.validation": [
        "MAX_RAW_DEPTH",
        "MISSING",
        "Checked",
        "InvalidFieldError",
        "check_raw",
        "check_text",
    ],
    "replay.sessions": [
        "SessionEntry",
        "SessionFlag",
        "WalkError",
        "entry_from_parts",
        "finish_listing",
        "iter_rollout_paths",
        "raise_walk_error",
        "list_sessions",
        "read_session_entry",
        "usual_entry",
    ],
    "ledger.importers._codex_lines": ["CodexSession", "convert_codex"],
    "ledger.writer_files": ["PreadFile", "new_rollout", "session_rollout", "taken_rollout"],
}

_D = "<Durability.DRAIN: 'drain'>"
_STOP = (
    "kind: 'StopKind | str', reason: 'str' = '', error: 'ErrorDetail | BaseException | None' = None"
)
_EXIT = (
    "exc_type: 'type[BaseException] | None', exc: 'BaseException | None', "
    "tb: 'TracebackType | None'"
)
_CREATE = (
    "(directory: 'str | os.PathLike[str]', *, session_id: 'str | None' = None, agent_name: "
    f"'str | None' = None, meta: 'Mapping[str, Any] | None' = None, durability: "
    f"'Durability | str' = {_D}) -> 'Self'"
)
_OPEN = f"(path: 'str | os.PathLike[str]', *, durability: 'Durability | str' = {_D}) -> 'Self'"

# The writer's public face before the split: kind and signature of each name.
_WRITER_BEFORE = {
    "__aenter__": ("function", "(self) -> 'Self'"),
    "__aexit__": ("function", f"(self, {_EXIT}) -> 'None'"),
    "__enter__": ("function", "(self) -> 'Self'"),
    "__exit__": ("function", f"(self, {_EXIT}) -> 'None'"),
    "__repr__": ("function", "(self) -> 'str'"),
    "aclose": ("function", "(self) -> 'None'"),
    "acreate": ("classmethod", _CREATE),
    "adrain": ("function", "(self) -> 'None'"),
    "agent_name": ("property", ""),
    "aopen": ("classmethod", _OPEN),
    "append": ("function", "(self, message: 'Message') -> 'None'"),
    "astop": ("function", f"(self, {_STOP}) -> 'Terminal'"),
    "close": ("function", "(self) -> 'None'"),
    "closed": ("property", ""),
    "compacted": (
        "function",
        "(self, messages: 'Iterable[Message]', summary: 'str | None' = None, *, extra: "
        "'msgspec.Raw | msgspec.UnsetType' = UNSET) -> 'None'",
    ),
    "create": ("classmethod", _CREATE),
    "drain": ("function", "(self) -> 'None'"),
    "durability": ("property", ""),
    "fork": (
        "classmethod",
        "(source: 'str | os.PathLike[str]', directory: 'str | os.PathLike[str] | None' = None, "
        "*, at: 'int | None' = None, copy: 'bool' = False, session_id: 'str | None' = None, "
        "agent_name: 'str | None' = None, meta: 'Mapping[str, Any] | None' = None, durability: "
        f"'Durability | str' = {_D}, locate: 'Locator | None' = None) -> 'Self'",
    ),
    "fork_origin": ("property", ""),
    "next_seq": ("property", ""),
    "note": ("function", "(self, record: 'Description') -> 'None'"),
    "open": ("classmethod", _OPEN),
    "path": ("property", ""),
    "repair": ("property", ""),
    "rewind": ("function", "(self, to: 'int', reason: 'str' = '') -> 'None'"),
    "session_id": ("property", ""),
    "stop": ("function", f"(self, {_STOP}) -> 'Terminal'"),
    "stopped": ("property", ""),
}


@pytest.mark.parametrize("module", sorted(_NAMES_BEFORE))
def test_every_public_name_of_a_split_module_is_importable_where_it_was(module: str) -> None:
    """A module that was split still gives every name of its former ``__all__``."""
    mod = importlib.import_module(module)
    missing = [name for name in _NAMES_BEFORE[module] if not hasattr(mod, name)]
    assert missing == []
    assert set(_NAMES_BEFORE[module]) <= set(mod.__all__)


def test_the_writers_public_face_is_as_it_was() -> None:
    """Each public method, classmethod and property of the writer keeps its kind, its
    signature and a docstring, and none is added or lost."""
    public = {
        name for name in dir(RolloutWriter) if not name.startswith("_") or name in _WRITER_BEFORE
    }
    assert public == set(_WRITER_BEFORE)
    for name, (kind, signature) in _WRITER_BEFORE.items():
        found = inspect.getattr_static(RolloutWriter, name)
        assert type(found).__name__ == kind, name
        if kind != "property":
            assert str(inspect.signature(getattr(RolloutWriter, name))) == signature, name
        if not name.startswith("__") or name == "__repr__":
            assert inspect.getdoc(found), name


def test_no_name_is_defined_by_two_parts_of_the_writer() -> None:
    """The classes the writer is composed of define disjoint names, so no part silently
    shadows another through the order of the bases."""
    seen: dict[str, str] = {}
    for part in RolloutWriter.__mro__[:-1]:
        for name in vars(part):
            if name.startswith("__") and name.endswith("__") and name not in _WRITER_BEFORE:
                continue
            assert name not in seen, f"{name} in {part.__name__} and {seen[name]}"
            seen[name] = part.__name__


def test_every_field_a_part_of_the_writer_uses_is_set_by_the_writer(tmp_path: Path) -> None:
    """Each field a part of the writer declares (and reads) exists on a writer once made."""
    w = RolloutWriter.create(tmp_path)
    try:
        for part in RolloutWriter.__mro__[1:-1]:
            for name in vars(part).get("__annotations__", {}):
                assert hasattr(w, name), f"{part.__name__} uses {name}, which no writer has"
    finally:
        w.close()


class _Counting(RolloutWriter):
    """A framework's writer: counts what it appends."""

    appended = 0

    def append(self, message: Message) -> None:
        type(self).appended += 1
        super().append(message)


def test_a_subclass_is_what_create_open_and_fork_make_and_its_override_is_used(
    tmp_path: Path,
) -> None:
    """A subclass overriding a method gets instances of itself from create, open and fork,
    its override is called, and the checkpoints it leads to are exact."""
    _Counting.appended = 0
    with _Counting.create(tmp_path, session_id="mine") as w:
        assert type(w) is _Counting
        assert isinstance(w, RolloutWriter)
        w.append(Message(role=Role.USER, content="one"))
        w.stop(StopKind.PAUSED)
        assert repr(w).startswith("<RolloutWriter open ")
    with _Counting.open(w.path) as again:
        assert type(again) is _Counting
        again.append(Message(role=Role.USER, content="two"))
        again.stop(StopKind.PAUSED)
    forked = _Counting.fork(w.path, tmp_path / "forks")
    try:
        assert type(forked) is _Counting
    finally:
        forked.close()
    assert _Counting.appended == 2
    whole = rebuild(w.path)
    assert whole.checkpoint is not None
    assert whole.checkpoint.digest == whole.at_checkpoint_digest
    assert repr(again).startswith("<RolloutWriter closed ")


def test_a_writer_is_neither_pickled_nor_deep_copied(tmp_path: Path) -> None:
    """A writer owns a lock and a thread: pickling or deep-copying it fails at once, as it did,
    and asking for a field it does not have is an AttributeError naming it."""
    w = RolloutWriter.create(tmp_path)
    try:
        with pytest.raises(TypeError):
            pickle.dumps(w)
        with pytest.raises(TypeError):
            copy.deepcopy(w)
        with pytest.raises(AttributeError, match="no_such_field"):
            _ = w.no_such_field  # type: ignore[attr-defined]
    finally:
        w.close()
