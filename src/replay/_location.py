"""Where a rollout is: a local path, or an object named by a URL on any fsspec file system.

The read entries take either. A ``str`` that starts with a scheme and ``://`` (``s3://``,
``gs://``, ``az://``, ``memory://``, ``file://``) is a URL and is read through
:mod:`replay.fleet`; anything else is a local path and is read as before, without importing
fsspec. A ``PathLike`` is never a URL. Results name an object by an :class:`ObjectURL`, a
``str`` with the few path attributes the read side uses (``name``), so that a value listed can
be passed back to any read entry as it is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final, TypeAlias

__all__ = ["Location", "ObjectURL", "is_url", "location", "split_url"]

# Two characters at least, so that a Windows drive (``C:/``) is never taken for a scheme.
_SCHEME: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+)://")


class ObjectURL(str):
    """The URL of an object (``s3://bucket/prefix/name.jsonl``): the string, plus ``name``."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The last part of the URL's path (the object's file name)."""
        return self.rstrip("/").rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        """The name without its last suffix (``x`` for ``.../x.jsonl``)."""
        name = self.name
        return name.rsplit(".", 1)[0] if "." in name[1:] else name

    @property
    def scheme(self) -> str:
        """The URL's scheme (``s3``)."""
        return self.split("://", 1)[0]

    def joinpath(self, *parts: str) -> ObjectURL:
        """This URL with ``parts`` appended, one ``/`` between each."""
        base = self.rstrip("/")
        return ObjectURL("/".join((base, *(p.strip("/") for p in parts))))

    def resolve(self) -> ObjectURL:
        """The URL itself: an object has no links to resolve (a path's method, for symmetry)."""
        return self


Location: TypeAlias = Path | ObjectURL
"""A rollout's place: a local path or an object's URL."""


def is_url(value: object) -> bool:
    """Whether ``value`` is a ``str`` that starts with ``scheme://`` (a PathLike never is)."""
    return isinstance(value, str) and _SCHEME.match(value) is not None


def location(value: str | os.PathLike[str]) -> Location:
    """``value`` as a :data:`Location`: an :class:`ObjectURL` for a URL, else a ``Path``."""
    if isinstance(value, ObjectURL | Path):
        return value
    if is_url(value):
        return ObjectURL(value)
    return Path(value)


def split_url(url: str) -> tuple[str, str]:
    """``(scheme, rest)`` of a URL (``("s3", "bucket/prefix")``)."""
    m = _SCHEME.match(url)
    if m is None:
        raise ValueError(f"{url!r} is not a URL: it must start with a scheme such as s3://")
    return m["scheme"], url[m.end() :]
