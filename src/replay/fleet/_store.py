"""The object store under a fleet root: one fsspec file system, the root in it, clear errors.

fsspec, and the file system's own package (s3fs, gcsfs, adlfs), are imported here and only
here, when a URL is first used, so that ``import replay`` never pays for them. Credentials and
endpoints come from fsspec's usual configuration (its config files and ``FSSPEC_*``
variables, then each file system's own: ``AWS_*`` for S3) and from options given for the
duration of a ``with storage_options(...)`` block (the command's ``--storage-option``).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final

import attrs

from ledger.error_copies import CopiedAsRaised
from replay._location import ObjectURL, split_url

__all__ = [
    "ObjectInfo",
    "Store",
    "StoreAccessError",
    "StoreError",
    "current_storage_options",
    "RootScan",
    "INDEX_DIR",
    "list_objects",
    "scan_root",
    "open_store",
    "storage_options",
    "store_error",
    "version_of",
]

_OPTIONS: ContextVar[Mapping[str, Any]] = ContextVar("rollout_storage_options", default={})  # noqa: B039 - never mutated
_SUFFIX: Final = ".jsonl"
_LISTING_CACHED: Final = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"})


class StoreError(CopiedAsRaised, OSError):
    """An object store refused or failed an operation; the message says which and what to do."""

    def __init__(self, url: str, message: str, *, code: int = errno.EIO) -> None:
        super().__init__(code, message, url)


class StoreAccessError(StoreError, PermissionError):
    """The store refused the credential (or its rights): nothing was read, written or deleted."""


@contextlib.contextmanager
def storage_options(**options: Any) -> Iterator[None]:
    """Give fsspec options (``key``, ``secret``, ``endpoint_url``, ...) to every URL opened inside.

    They are added to fsspec's own configuration for the duration of the block, in this
    thread and the tasks it starts; the innermost block wins.
    """
    token = _OPTIONS.set({**_OPTIONS.get(), **options})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def current_storage_options() -> dict[str, Any]:
    """The options of the innermost :func:`storage_options` block (empty outside any)."""
    return dict(_OPTIONS.get())


def store_error(exc: BaseException, url: str, doing: str) -> OSError:
    """``exc``, met while ``doing`` something at ``url``, as one clear :class:`StoreError`."""
    if isinstance(exc, StoreError):
        return exc
    detail = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, PermissionError):
        return StoreAccessError(
            url,
            f"access denied while {doing} ({detail}): check the credentials "
            "(the store's usual variables or config, or --storage-option key=... "
            "secret=...) and that they may read and write there",
            code=errno.EACCES,
        )
    if isinstance(exc, FileNotFoundError):
        return StoreError(url, f"not found while {doing} ({detail})", code=errno.ENOENT)
    if isinstance(exc, OSError) and exc.errno == errno.EBUSY:
        # s3fs's FileExpired: the object's ETag changed between two reads of one file.
        return StoreError(
            url,
            f"the object was replaced while {doing} ({detail}); nothing was changed: run again",
            code=errno.EBUSY,
        )
    return StoreError(url, f"the store failed while {doing}: {type(exc).__name__}: {detail}")


@attrs.frozen
class Store:
    """One fsspec file system and a root in it; ``url`` is the root as a URL."""

    fs: Any = attrs.field(eq=False, repr=False)
    scheme: str
    root: str
    url: ObjectURL
    options: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    def url_of(self, path: str) -> ObjectURL:
        """The URL of the object at ``path`` (in the file system's terms)."""
        return ObjectURL(f"{self.scheme}://{path.lstrip('/') if self.scheme != 'file' else path}")

    def path_of(self, url: str) -> str:
        """The file system's path of the object at ``url``."""
        return str(self.fs._strip_protocol(url))

    def key(self, path: str) -> str:
        """``path`` relative to the root (``2026-12-02/x.jsonl``)."""
        base = self.root.rstrip("/")
        return path[len(base) + 1 :] if path.startswith(base + "/") else path

    def join(self, *parts: str) -> str:
        """The path of ``parts`` under the root."""
        return "/".join((self.root.rstrip("/"), *(p.strip("/") for p in parts)))


def open_store(url: str | os.PathLike[str], options: Mapping[str, Any] | None = None) -> Store:
    """The :class:`Store` at ``url``, with ``options`` over those of :func:`storage_options`.

    Raises ``ImportError`` with the extra to install when fsspec is missing, and
    :class:`StoreError` for a URL whose scheme no installed file system serves.
    """
    text = os.fspath(url)
    scheme, _ = split_url(text)
    try:
        import fsspec.core
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "rollouts on object storage need the fleet extra: pip install 'rollout-ledger[fleet]'"
        ) from exc
    merged = {**_OPTIONS.get(), **(options or {})}
    if scheme in _LISTING_CACHED:
        # Every call must see the store as it is now: another machine ships meanwhile.
        merged.setdefault("use_listings_cache", False)
    try:
        fs, path = fsspec.core.url_to_fs(text, **merged)
    except (ImportError, ValueError) as exc:
        raise StoreError(
            text,
            f"cannot open a file system for {scheme}:// ({exc}); install the package that "
            "serves it (s3fs for s3://, gcsfs for gs://, adlfs for az://)",
            code=errno.EINVAL,
        ) from None
    root = str(path).rstrip("/") or str(path)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        protocol = "file"
    return Store(fs=fs, scheme=protocol, root=root, url=ObjectURL(text.rstrip("/")), options=merged)


@attrs.frozen
class ObjectInfo:
    """One rollout object as the store lists it: path, URL, size and version (ETag or mtime)."""

    path: str
    url: ObjectURL
    size: int
    version: str


def version_of(info: Mapping[str, Any]) -> str:
    """What changes when an object is replaced: its ETag, else its size and modification time."""
    for key in ("ETag", "etag", "md5Hash", "generation", "version_id"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return f"{info.get('size')}:{info.get('mtime') or info.get('LastModified') or ''}"


INDEX_DIR: Final = ".index"
"""The folder under a root that holds the index's Parquet parts (hidden from the listing)."""


@attrs.frozen
class RootScan:
    """What one listing of the store under a root found: rollout objects and index parts."""

    objects: tuple[ObjectInfo, ...]
    index_parts: tuple[str, ...]


def scan_root(store: Store) -> RootScan:
    """Every ``*.jsonl`` object under the root, and the index's parts, from one listing.

    As the local listing does, a name or folder starting with ``.`` is skipped (the index
    lives in ``.index/``). A root with no objects lists nothing; a missing bucket, a refused
    credential or an unreachable store raises :class:`StoreError`.
    """
    try:
        found = store.fs.find(store.root, detail=True)
    except Exception as exc:
        raise store_error(exc, store.url, "listing the root") from None
    out: list[ObjectInfo] = []
    parts: list[str] = []
    for path, info in found.items():
        if info.get("type", "file") != "file":
            continue
        key = store.key(path).split("/")
        if len(key) == 3 and key[0] == INDEX_DIR and key[2].endswith(".parquet"):
            parts.append(path)
            continue
        # Hidden names are skipped as the local walk skips them; "." and ".." are not hidden
        # names but parts of a hostile key: such objects are listed, never silently left out.
        if not path.endswith(_SUFFIX) or any(
            part.startswith(".") and part not in (".", "..") for part in key
        ):
            continue
        out.append(
            ObjectInfo(
                path=path, url=store.url_of(path), size=int(info["size"]), version=version_of(info)
            )
        )
    out.sort(key=lambda o: o.path)
    return RootScan(objects=tuple(out), index_parts=tuple(sorted(parts)))


def list_objects(store: Store) -> list[ObjectInfo]:
    """Every ``*.jsonl`` object under the root, skipping hidden folders, sorted by path."""
    return list(scan_root(store).objects)
