"""Fleet-wide work on Dask: a LocalCluster gives the same results as the single-process path."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleet_data import upload, varied_fleet
from replay.cli import cli
from replay.fleet import build_index, fleet_sql, verify_fleet
from replay.fleet.testing import LocalS3


@pytest.fixture(scope="module")
def cluster(s3_server: LocalS3) -> Iterator[str]:
    """A two-process Dask LocalCluster whose workers reach the moto server; its address."""
    from dask.distributed import LocalCluster

    env = {
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as c:
            yield c.scheduler_address


@pytest.fixture
def fleet_url(tmp_path: Path, bucket: str) -> str:
    """The varied fleet as objects under ``bucket``/fleet."""
    url = f"{bucket}/fleet"
    upload(varied_fleet(tmp_path), url)
    return url


def test_verify_on_a_cluster_equals_verify_in_process(fleet_url: str, cluster: str) -> None:
    """verify_fleet gives the same results, in the same order, on Dask and in this process."""
    here = verify_fleet(fleet_url, scheduler=None)
    there = verify_fleet(fleet_url, scheduler=cluster, batch=2)  # four tasks
    assert there == here
    assert [r["status"] for r in here].count("failed") == 1


def _rows(url: str) -> list[tuple[Any, ...]]:
    with fleet_sql(url) as q:
        return list(
            q.query("SELECT * EXCLUDE (indexed_at, version) FROM sessions ORDER BY path").rows
        )


def test_indexing_on_a_cluster_writes_the_rows_of_the_single_process_path(
    tmp_path: Path, bucket: str, cluster: str
) -> None:
    """The index written by Dask workers holds the same rows as the one written in process."""
    paths = varied_fleet(tmp_path)
    upload(paths, f"{bucket}/a")
    upload(paths, f"{bucket}/b")
    assert build_index(f"{bucket}/a", scheduler=None).indexed == 7
    assert build_index(f"{bucket}/b", scheduler=cluster, batch=3).indexed == 7

    def relative(rows: list[tuple[Any, ...]]) -> list[str]:
        return [
            json.dumps(r, default=str).replace("/a/", "/X/").replace("/b/", "/X/") for r in rows
        ]

    assert relative(_rows(f"{bucket}/a")) == relative(_rows(f"{bucket}/b"))


def test_the_command_sends_fleet_work_to_a_scheduler(fleet_url: str, cluster: str) -> None:
    """`verify --all` and `index` on a URL root take --scheduler ADDRESS."""
    verified = CliRunner().invoke(
        cli, ["verify", "--all", "--json", "--root", fleet_url, "--scheduler", cluster]
    )
    assert verified.exit_code == 1  # the damaged head fails
    assert len(json.loads(verified.output)["sessions"]) == 7
    indexed = CliRunner().invoke(cli, ["index", fleet_url, "--scheduler", cluster])
    assert indexed.exit_code == 0, indexed.output
    assert "7 indexed" in indexed.output
    assert os.environ.get("AWS_ENDPOINT_URL")


def test_by_default_fleet_work_runs_on_a_local_cluster(
    fleet_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --scheduler, `index` starts a LocalCluster for the job and stops it after."""
    import dask.distributed

    started: list[Any] = []
    real = dask.distributed.LocalCluster

    def recording(*args: Any, **kwargs: Any) -> Any:
        cluster = real(*args, **{**kwargs, "n_workers": 1})
        started.append(cluster)
        return cluster

    monkeypatch.setattr(dask.distributed, "LocalCluster", recording)
    indexed = CliRunner().invoke(cli, ["index", fleet_url])
    assert indexed.exit_code == 0, indexed.output
    assert "7 indexed" in indexed.output
    assert len(started) == 1
    assert started[0].status.name == "closed"
