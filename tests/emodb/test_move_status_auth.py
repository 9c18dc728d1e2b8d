"""A move's status is shown only to callers that may see the status of its source or destination."""

from __future__ import annotations

import time
from pathlib import Path

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore, OutgoingMessage

KEYS = """
api_keys:
  - name: admin
    key: k-admin
    permissions: ["queue|*|*"]
  - name: source-reader
    key: k-src
    permissions: ["queue|get_status|src-*"]
  - name: destination-reader
    key: k-dst
    permissions: ["queue|get_status|dst-*"]
  - name: stranger
    key: k-other
    permissions: ["queue|*|other-*"]
"""


def test_move_status_needs_get_status_on_one_end(tmp_path: Path, file_store: FileStore) -> None:
    config = tmp_path / "keys.yaml"
    config.write_text(KEYS)
    app = create_app(Settings(root=tmp_path / "root", config=config, node_id="t"), store=file_store)
    client = app.test_client()
    file_store.create_queue("src-a")
    file_store.send_batch("src-a", [OutgoingMessage(body=b'{"n":1}')])
    r = client.post("/queue/1/_move?from=src-a&to=dst-a", headers={"X-BV-API-Key": "k-admin"})
    assert r.status_code == 200, r.text
    ref = r.json["id"]
    deadline = time.monotonic() + 10
    while file_store.move_status(ref).state.value == "IN_PROGRESS" and time.monotonic() < deadline:
        time.sleep(0.02)
    for key in ("k-admin", "k-src", "k-dst"):
        r = client.get(f"/queue/1/_move/{ref}", headers={"X-BV-API-Key": key})
        assert r.status_code == 200 and r.json == {"from": "src-a", "to": "dst-a", "status": "COMPLETE"}, key
    r = client.get(f"/queue/1/_move/{ref}", headers={"X-BV-API-Key": "k-other"})
    assert r.status_code == 403 and r.json == {"reason": "not authorized"}
    r = client.get(f"/queue/1/_move/{ref}")  # no key at all
    assert r.status_code == 403
