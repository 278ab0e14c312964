"""A local S3 server for tests and benchmarks: moto on the loopback interface, counting bytes.

``LocalS3`` serves moto's S3 on ``127.0.0.1`` and a free port, in a thread of this process
(no network, nothing outside it), and counts every request and the bytes of every response
body, so that a test can pin what an operation costs on the wire. moto is a test dependency
(``pip install 'moto[server]'``), imported when a server starts. moto ignores S3's
``WriteOffsetBytes``: nothing here may rely on native appends (ADR 0141).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

__all__ = ["LocalS3", "Request"]


@attrs.frozen
class Request:
    """One request the server answered: method, path and query, status, the bytes of the
    response's body, the range asked for, and the bytes of the request's body."""

    method: str
    path: str
    status: int
    body_bytes: int
    range: str | None = None
    sent_bytes: int = 0


class _CountingInput:
    """A request body that counts the bytes read from it (the bytes the client sent)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.count = 0

    def read(self, *args: Any) -> bytes:
        data: bytes = self._raw.read(*args)
        self.count += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        n: int = self._raw.readinto(buffer)
        self.count += n or 0
        return n

    def readline(self, *args: Any) -> bytes:
        data: bytes = self._raw.readline(*args)
        self.count += len(data)
        return data

    def __iter__(self) -> Iterator[bytes]:
        for line in self._raw:
            self.count += len(line)
            yield line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class LocalS3:
    """moto's S3 server on 127.0.0.1, counting requests; use as a context manager or start/stop."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._in_flight = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.endpoint = ""

    def _app(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterator[bytes]]:
        def counting(
            environ: dict[str, Any], start_response: Callable[..., Any]
        ) -> Iterator[bytes]:
            status: list[int] = [0]

            def start(code: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
                status[0] = int(code.split(" ", 1)[0])
                return start_response(code, headers, *rest)

            body = _CountingInput(environ["wsgi.input"])
            environ["wsgi.input"] = body
            n = 0
            with self._lock:
                self._in_flight += 1
            try:
                for chunk in app(environ, start):
                    n += len(chunk)
                    yield chunk
            finally:
                # The client may hold the whole answer before this runs: counted() waits.
                query = environ.get("QUERY_STRING", "")
                path = environ.get("PATH_INFO", "") + (f"?{query}" if query else "")
                with self._lock:
                    self.requests.append(
                        Request(
                            environ["REQUEST_METHOD"],
                            path,
                            status[0],
                            n,
                            environ.get("HTTP_RANGE"),
                            body.count,
                        )
                    )
                    self._in_flight -= 1
                    self._settled.notify_all()

        return counting

    def start(self) -> str:
        """Start serving; returns the endpoint URL (``http://127.0.0.1:PORT``)."""
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            "127.0.0.1", 0, self._app(app), threaded=True, request_handler=MotoRequestHandler
        )
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self.endpoint

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def reset_counts(self) -> None:
        """Forget the requests counted so far."""
        with self._lock:
            self.requests.clear()

    def counted(self) -> list[Request]:
        """The requests answered since the last reset (after those still being answered end,
        for up to five seconds: a client holds an answer before the server has counted it)."""
        with self._settled:
            self._settled.wait_for(lambda: self._in_flight == 0, timeout=5.0)
            return list(self.requests)

    def set_auth(self, enforced: bool) -> None:
        """Make moto check credentials (unknown keys refused) or accept any, for this process."""
        from moto import settings
        from moto.core.authorization import ActionAuthenticatorMixin

        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0 if enforced else float("inf")
        ActionAuthenticatorMixin.request_count = 0

    def __enter__(self) -> LocalS3:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
