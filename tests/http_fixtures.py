"""Fixtures for Flask test-client tests of the HTTP doors (real FileStore, fsync off): a plugin of
the root conftest, so the tests of every door (tests/emodb, tests/mq, tests/console, tests/http) share them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore

API_CONFIG = """
api_keys:
  - name: all
    key: k-all
    permissions: ["queue|*|*"]
  - name: none
    key: k-none
    permissions: []
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def file_store(root: Path) -> Iterator[FileStore]:
    s = FileStore(root, node_id="api-test", fsync=False)
    yield s
    s.close()


@pytest.fixture
def app(tmp_path: Path, file_store: FileStore) -> Flask:
    config = tmp_path / "keys.yaml"
    config.write_text(API_CONFIG)
    return create_app(Settings(root=tmp_path / "root", config=config, node_id="api-test",
                               max_body_bytes=256 * 1024), store=file_store)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    c = app.test_client()
    c.environ_base["HTTP_X_BV_API_KEY"] = "k-all"
    return c
