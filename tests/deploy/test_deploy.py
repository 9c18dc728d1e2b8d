"""deploy/: the compose file, Prometheus and Grafana configs parse, the dashboard and the alerts use
only metric names a real ``spoolq serve`` exports, and the systemd unit is hardened and checks its config."""

from __future__ import annotations

import configparser
import json
import re
import time
from pathlib import Path
from typing import Any

import boto3
import redis
import requests
import yaml

from tests.e2e.spoolq_server import free_port, running_server

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRIC = re.compile(r"\b(spoolq_[a-z_]+)\b")


def _yaml(name: str) -> Any:
    return yaml.safe_load((DEPLOY / name).read_text())


def _dashboard() -> dict[str, Any]:
    return dict(json.loads((DEPLOY / "grafana/dashboards/spoolq.json").read_text()))


def _exprs() -> list[str]:
    exprs = [t["expr"] for p in _dashboard()["panels"] for t in p.get("targets", [])]
    exprs += [r["expr"] for g in _yaml("prometheus/alerts.yml")["groups"] for r in g["rules"]]
    return exprs


def test_compose_and_configs_parse() -> None:
    compose = _yaml("compose.yaml")
    assert set(compose["services"]) == {"spoolq", "prometheus", "grafana"}
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            host = volume.split(":", 1)[0]
            if host.startswith("."):
                assert (DEPLOY / host).exists(), host
    assert (DEPLOY / compose["services"]["spoolq"]["build"]["context"] /
            compose["services"]["spoolq"]["build"]["dockerfile"]).exists()
    prom = _yaml("prometheus/prometheus.yml")
    assert prom["scrape_configs"][0]["static_configs"][0]["targets"] == ["spoolq:8480"]
    assert _yaml("grafana/provisioning/datasources/prometheus.yaml")["datasources"][0]["uid"] == "prometheus"
    assert _yaml("grafana/provisioning/dashboards/spoolq.yaml")["providers"][0]["options"]["path"]


def test_dashboard_shape() -> None:
    dash = _dashboard()
    assert dash["uid"] == "spoolq" and dash["panels"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    titles = " ".join(p["title"] for p in dash["panels"]).lower()
    for topic in ("ready", "messages per second", "latency", "flush", "disque"):
        assert topic in titles
    for p in dash["panels"]:
        assert {"x", "y", "w", "h"} <= set(p["gridPos"]) and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "prometheus" and t["expr"].count("(") == t["expr"].count(")")


def _exported(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            names.add(name)
            if kind == "histogram":
                names |= {name + "_bucket", name + "_sum", name + "_count"}
            if kind == "counter":
                names.add(name + "_total")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_dashboard_and_alerts_use_exported_metrics(tmp_path: Path) -> None:
    disque_port = free_port()
    with running_server(tmp_path, keys=False, workers=2, threads=8,
                        extra_args=("--disque-port", str(disque_port))) as server:
        url = server.url
        with redis.Redis(host="127.0.0.1", port=disque_port, protocol=2, socket_timeout=10) as disque:
            disque.execute_command("ADDJOB", "dash", "job", 0)
        requests.post(f"{url}/queue/1/dash/send", json={"a": 1}, timeout=5)
        requests.get(f"{url}/queue/1/dash-empty/poll?wait=0.2", timeout=5)
        sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                           aws_secret_access_key="y")
        q = sqs.create_queue(QueueName="dash")["QueueUrl"]
        sqs.send_message(QueueUrl=q, MessageBody="hi")
        time.sleep(0.2)
        r = requests.get(f"{url}/metrics", timeout=10)
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    exported = _exported(r.text)
    used = {m for e in _exprs() for m in METRIC.findall(e)}
    assert used and not used - exported, sorted(used - exported)
    assert 'operation="SendMessage"' in r.text and "spoolq_queue_ready{" in r.text
    assert 'spoolq_commands_total{command="ADDJOB",door="disque",result="ok"} 1.0' in r.text


def test_systemd_unit_is_hardened_and_checks_config() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string((DEPLOY / "spoolq.service").read_text())
    svc = unit["Service"]
    assert svc["User"] == "spoolq" and svc["NoNewPrivileges"] == "true" and svc["ProtectSystem"] == "strict"
    assert "/var/lib/spoolq" in svc["ReadWritePaths"]
    assert re.search(r"^Environment=.*SPOOLQ_ROOT=/var/lib/spoolq", (DEPLOY / "spoolq.service").read_text(), re.M)
    assert svc["ExecStartPre"].endswith("spoolq check-config")
    assert "spoolq serve" in svc["ExecStart"]
