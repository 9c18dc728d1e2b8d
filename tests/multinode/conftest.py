"""Fixtures of the multinode tier: one GlusterFS per session, one cluster of nodes per volume.

The session fixture skips the whole tier, with the reason, where GlusterFS cannot run (not root,
no FUSE, no network namespaces, packages missing and not installable); a failure to bring it up
where it can run is an error, not a skip. Teardown (nodes, mounts, glusterd, namespace) runs
even when tests fail. A failed test's report ends with what every node of its cluster was doing
(``autopsy.py``: threads, Python stacks, whether the mount answers, the log's tail).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.multinode import autopsy
from tests.multinode.cluster import VOLUMES, Cluster, running_gluster, unavailable


@pytest.fixture(scope="session")
def gluster() -> Iterator[Path]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with running_gluster() as directory:
        yield directory


@pytest.fixture(scope="module", params=VOLUMES)
def cluster(request: pytest.FixtureRequest, gluster: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three nodes (gunicorn each, ``--flush fsync --peers 5``) on one volume's three mounts."""
    logs = tmp_path_factory.mktemp(f"multinode-{request.param}")
    nodes = Cluster.start(request.param, logs, extra_args=("--peers", "5"))
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
