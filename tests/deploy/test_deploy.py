"""deploy/: the compose file, Prometheus and Grafana configs parse, the dashboard and the alerts use
only metric names a real ``spoolq serve`` exports, and the systemd unit is hardened and checks its config."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
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
    # the data in systemd's state directory (/var/lib/spoolq), which spoolq takes from $STATE_DIRECTORY
    assert svc["StateDirectory"] == "spoolq" and "ReadWritePaths" not in svc
    assert not re.search(r"^Environment=.*SPOOLQ_ROOT=", (DEPLOY / "spoolq.service").read_text(), re.M)
    assert svc["ExecStartPre"].endswith("spoolq check-config")
    assert "spoolq serve" in svc["ExecStart"]


PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing (scripts/system-deps prometheus)")


@needs_promtool
def test_promtool_accepts_the_shipped_rules_and_config_in_place() -> None:
    assert PROMTOOL is not None
    rules = subprocess.run([PROMTOOL, "check", "rules", str(DEPLOY / "prometheus/alerts.yml")],
                           capture_output=True, text=True, timeout=60)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = subprocess.run([PROMTOOL, "check", "config", str(DEPLOY / "prometheus/prometheus.yml")],
                            capture_output=True, text=True, timeout=60)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "SUCCESS" in config.stdout + config.stderr and "alerts.yml" in config.stdout + config.stderr


@needs_promtool
def test_promtool_accepts_the_config_as_compose_mounts_it(tmp_path: Path) -> None:
    """The compose file mounts prometheus.yml and alerts.yml somewhere: lay them out the same way."""
    assert PROMTOOL is not None
    prom = _yaml("compose.yaml")["services"]["prometheus"]
    config_in_container = next(a.split("=", 1)[1] for a in prom["command"] if a.startswith("--config.file="))
    for volume in prom["volumes"]:
        host, target = volume.split(":")[:2]
        if host.startswith("."):
            dest = tmp_path / target.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(DEPLOY / host, dest)
    config = tmp_path / config_in_container.lstrip("/")
    done = subprocess.run([PROMTOOL, "check", "config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    rule_files = yaml.safe_load(config.read_text())["rule_files"]
    assert all((config.parent / r).exists() for r in rule_files)


def test_alerts_tell_a_full_disk_from_an_unreadable_store() -> None:
    rules = {r["alert"]: r for g in _yaml("prometheus/alerts.yml")["groups"] for r in g["rules"]}
    assert "spoolq_store_writable == 0" in rules["SpoolqDiskFull"]["expr"]
    assert rules["SpoolqStoreUnavailable"]["expr"] == "spoolq_store_up == 0"
    assert "written" not in rules["SpoolqStoreUnavailable"]["annotations"]["summary"]
    titles = {p["title"]: p for p in _dashboard()["panels"]}
    assert "spoolq_store_writable" in titles["Store writable"]["targets"][0]["expr"]
    container = (DEPLOY / "Containerfile").read_text()
    assert "/healthz" in container and "/readyz" not in container.split("HEALTHCHECK", 1)[1].split("\n")[0]
    assert re.search(r"^STOPSIGNAL SIGTERM$", container, re.M)
    spoolq = _yaml("compose.yaml")["services"]["spoolq"]
    assert "/healthz" in " ".join(spoolq["healthcheck"]["test"]) and spoolq["stop_grace_period"] == "45s"


def test_systemd_keeps_the_sockets_across_restarts_and_reloads_with_hup(tmp_path: Path) -> None:
    text = (DEPLOY / "spoolq.service").read_text()
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(text)
    svc = unit["Service"]
    assert svc["ExecReload"] == "/bin/kill -HUP $MAINPID" and svc["KillMode"] == "mixed"
    assert svc["Sockets"].split() == ["spoolq-http.socket", "spoolq-disque.socket", "spoolq-disque-tls.socket"]
    assert int(svc["TimeoutStopSec"]) > 30  # more than the graceful stop
    for name, fd_name in (("spoolq-http.socket", "http"), ("spoolq-disque.socket", "disque"),
                          ("spoolq-disque-tls.socket", "disque-tls")):
        sock = configparser.ConfigParser(strict=False, interpolation=None)
        sock.optionxform = str  # type: ignore[assignment,method-assign]
        sock.read_string((DEPLOY / name).read_text())
        assert sock["Socket"]["FileDescriptorName"] == fd_name and sock["Socket"]["Service"] == "spoolq.service"
        assert "PartOf" not in sock["Unit"]  # it would close the socket with every restart
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze missing")
    for name in ("spoolq.service", "spoolq-http.socket", "spoolq-disque.socket", "spoolq-disque-tls.socket"):
        content = (DEPLOY / name).read_text().replace("/opt/spoolq/venv/bin/spoolq", "/bin/true")
        (tmp_path / name).write_text(content)
    done = subprocess.run([analyze, "verify", "--man=no", *(str(tmp_path / n) for n in
                                                            ("spoolq.service", "spoolq-http.socket",
                                                             "spoolq-disque.socket", "spoolq-disque-tls.socket"))],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_the_gunicorn_config_gives_what_serve_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``gunicorn -c deploy/gunicorn.conf.py`` loads, and sets every option ``spoolq serve`` sets."""
    import runpy

    from spoolq.http.gunicorn.server import gunicorn_options
    from spoolq.settings.server import load_settings

    monkeypatch.setenv("SPOOLQ_ROOT", str(tmp_path))
    monkeypatch.setenv("SPOOLQ_PORT", "18480")
    loaded = runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))
    expected = {k: v for k, v in gunicorn_options(load_settings()).items() if v is not None}
    assert {k: loaded[k] for k in expected} == expected
    assert loaded["bind"] == ["127.0.0.1:18480"] and loaded["wsgi_app"] == "spoolq.http.wsgi:application()"


def test_the_documented_image_build_keeps_the_health_check() -> None:
    """podman's default image format (OCI) drops HEALTHCHECK with a warning: every documented build
    asks for the docker format (tests/container checks the built image has its health check)."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
    for text in ((DEPLOY / "Containerfile").read_text(), docs.read_text()):
        builds = re.findall(r"podman build[^\n`]*", text)
        assert builds and all("--format docker" in b for b in builds), builds
