"""Shared test set-up: Hypothesis profiles and a guard that keeps tests out of the real home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from replay.fleet.testing import LocalS3

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point HOME and ROLLOUT_HOME at a fresh directory so no test reads or writes the real home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROLLOUT_HOME", str(home / ".rollout"))
    return home


# --- the fleet: an S3 server on the loopback interface (moto), shared by a worker's tests ---


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalS3]:
    """A moto S3 server on 127.0.0.1 and a free port, for this test process (no network)."""
    with LocalS3() as server:
        yield server


@pytest.fixture
def s3_env(s3_server: LocalS3, monkeypatch: pytest.MonkeyPatch) -> LocalS3:
    """Point every S3 client of this test at the moto server, with fake credentials."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    s3_server.reset_counts()
    return s3_server


@pytest.fixture
def bucket(s3_env: LocalS3) -> str:
    """A fresh, empty bucket on the moto server; its URL (``s3://name``)."""
    import uuid

    import fsspec

    name = f"fleet-{uuid.uuid4().hex[:20]}"
    fsspec.filesystem("s3").mkdir(name)
    s3_env.reset_counts()
    return f"s3://{name}"
