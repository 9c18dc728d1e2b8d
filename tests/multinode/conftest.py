"""Fixtures of the multinode tier: one GlusterFS and one CephFS per session, brought up only when a
test asks for them, and one cluster of nodes per volume.

The session fixtures skip, with the reason, where a file system cannot run (not root, no FUSE, no
network namespaces, packages missing and not installable); a failure to bring it up where it can
run is an error, not a skip. Teardown (nodes, mounts, daemons, namespace) runs even when tests
fail; when any test of the session failed, the Ceph daemons' logs are kept in
``/tmp/spoolq-ceph-failed-logs`` (the session prints it). A failed test's report ends with what every node of its
cluster was doing (``autopsy.py``: threads, Python stacks, whether the mount answers, the log's
tail, the file system's status).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.multinode import autopsy
from tests.multinode.cluster import VOLUMES, Cluster, file_system, running_ceph, running_gluster, unavailable


@pytest.fixture(scope="session")
def gluster() -> Iterator[Path]:
    reason = unavailable("glusterfs")
    if reason is not None:
        pytest.skip(reason)
    with running_gluster() as directory:
        yield directory


#: where a failed session's Ceph logs are kept (until the next failed session)
KEPT_CEPH_LOGS = Path("/tmp/spoolq-ceph-failed-logs")


@pytest.fixture(scope="session")
def cephfs(request: pytest.FixtureRequest) -> Iterator[Path]:
    reason = unavailable("cephfs")
    if reason is not None:
        pytest.skip(reason)
    with running_ceph() as directory:
        try:
            yield directory
        finally:
            if request.session.testsfailed:
                shutil.rmtree(KEPT_CEPH_LOGS, ignore_errors=True)
                shutil.copytree(directory / "log", KEPT_CEPH_LOGS)
                print(f"\nCeph's logs of this session (tests failed): {KEPT_CEPH_LOGS}")


@pytest.fixture(scope="module", params=VOLUMES)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three nodes (gunicorn each, ``--flush fsync --peers 5``) on one volume's three mounts."""
    volume: str = request.param
    request.getfixturevalue("cephfs" if file_system(volume) == "cephfs" else "gluster")
    logs = tmp_path_factory.mktemp(f"multinode-{volume}")
    nodes = Cluster.start(volume, logs, extra_args=("--peers", "5"))
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, what every node of the test's cluster was doing (autopsy.py), as a section
    of the report: a client's timeout alone does not say where a node waits."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Cluster):
            report.sections.append((f"nodes of {value.volume} at the failure", autopsy.describe(value)))
