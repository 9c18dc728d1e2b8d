"""``spoolq check-config`` (and so ``serve``) checks the TLS files and names the one that is wrong,
in one line; and it refuses a clear-text Disque port that would carry AUTH keys next to TLS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from spoolq.cli.check_config import EXIT_CONFIG, checks
from spoolq.settings.server import Settings, SettingsError, load_settings
from tests.tls.conftest import Pki

KEYS = """
api_keys:
  - name: all
    key: k-all
    permissions: ["queue|*|*"]
"""


def _lines(tmp_path: Path, **overrides: object) -> list[str]:
    settings = load_settings({"root": tmp_path / "root", **overrides}, environ={})
    out = []
    for check in checks(settings):
        out.append(check.line())
        if check.failed:
            break
    return out


def _tls_line(tmp_path: Path, **overrides: object) -> str:
    lines = [line for line in _lines(tmp_path, **overrides) if "tls" in line.lower()]
    assert len(lines) == 1, lines
    return lines[0]


def test_good_files_are_one_ok_line(tmp_path: Path, pki: Pki) -> None:
    line = _tls_line(tmp_path, certfile=pki.cert, keyfile=pki.key)
    assert line == f"ok: TLS with {pki.cert}", line
    line = _tls_line(tmp_path, certfile=pki.cert, keyfile=pki.key, client_ca=pki.ca)
    assert line.startswith("ok: ") and f"client certificates signed by {pki.ca} required" in line


def test_a_key_and_certificate_in_one_file(tmp_path: Path, pki: Pki) -> None:
    assert _tls_line(tmp_path, certfile=pki.client).startswith("ok: TLS with")


@pytest.mark.parametrize(("which", "wrong", "says"), [
    ("certfile", "missing", "certfile {path}: no such file"),
    ("certfile", "directory", "certfile {path}: is a directory, not a file"),
    ("certfile", "a key", "certfile {path}: no PEM certificate in it"),
    ("keyfile", "missing", "keyfile {path}: no such file"),
    ("keyfile", "a certificate", "keyfile {path}: no PEM private key in it"),
    ("keyfile", "another key", "keyfile {path}: the private key does not match the certificate in {cert}"),
    ("keyfile", "encrypted", "keyfile {path}: the private key is encrypted; give spoolq an unencrypted key"),
    ("client_ca", "missing", "client_ca {path}: no such file"),
    ("client_ca", "a key", "client_ca {path}: no PEM certificate in it"),
    ("client_ca", "a server certificate", "client_ca {path}: holds no CA certificate"),
])
def test_the_wrong_file_is_named_in_one_line(tmp_path: Path, pki: Pki, which: str, wrong: str, says: str) -> None:
    path = {"missing": tmp_path / "nowhere.pem", "directory": tmp_path, "a key": pki.other_key,
            "a certificate": pki.ca, "another key": pki.other_key, "a server certificate": pki.client_cert,
            "encrypted": _encrypted_key(pki.key, tmp_path / "encrypted.key")}[wrong]
    files = {"certfile": pki.cert, "keyfile": pki.key, "client_ca": pki.ca} | {which: path}
    line = _tls_line(tmp_path, **files)
    assert line.startswith("FAILED: tls: " + says.format(path=path, cert=pki.cert)), line
    assert "\n" not in line


def _encrypted_key(key: Path, to: Path) -> Path:
    loaded = serialization.load_pem_private_key(key.read_bytes(), password=None)
    to.write_bytes(loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.BestAvailableEncryption(b"secret")))
    return to


@pytest.mark.parametrize("setting", ["keyfile", "client_ca", "disque_tls_port"])
def test_tls_settings_without_a_certificate_are_refused(tmp_path: Path, pki: Pki, setting: str) -> None:
    value = 7712 if setting == "disque_tls_port" else pki.key
    with pytest.raises(SettingsError, match=f"{setting} needs certfile"):
        Settings(root=tmp_path, **{setting: value})  # type: ignore[arg-type]


def test_one_port_cannot_speak_both(tmp_path: Path, pki: Pki) -> None:
    with pytest.raises(SettingsError, match="one port speaks one protocol"):
        Settings(root=tmp_path, certfile=pki.cert, disque_port=7711, disque_tls_port=7711)


def test_a_clear_text_disque_port_that_would_carry_keys_is_refused_next_to_tls(tmp_path: Path, pki: Pki) -> None:
    config = tmp_path / "spoolq.yaml"
    config.write_text(KEYS)
    tls = {"certfile": pki.cert, "keyfile": pki.key, "config": config, "disque_tls_port": 7712}
    line = _tls_line(tmp_path, **tls, disque_port=7711, disque_host="0.0.0.0")
    assert line.startswith("FAILED: tls: a clear-text Disque port (0.0.0.0:7711) next to TLS would carry AUTH keys"), line
    # on loopback the keys never leave the machine; TLS alone is fine anywhere
    assert _tls_line(tmp_path, **tls, disque_port=7711, disque_host="127.0.0.1").startswith("ok: ")
    assert _tls_line(tmp_path, **tls, disque_host="0.0.0.0").startswith("ok: ")


def test_check_config_and_serve_say_it_in_one_line_and_exit_2(tmp_path: Path, pki: Pki) -> None:
    args = ["--root", str(tmp_path / "root"), "--certfile", str(pki.cert), "--keyfile", str(pki.other_key)]
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_CONFIG, done
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failed == [f"FAILED: tls: keyfile {pki.other_key}: the private key does not match "
                      f"the certificate in {pki.cert}"], done.stdout
    served = subprocess.run([sys.executable, "-m", "spoolq.cli", "serve", "--port", "1", *args],
                            capture_output=True, text=True, timeout=60)
    assert served.returncode == EXIT_CONFIG, served
    assert f"spoolq: tls: keyfile {pki.other_key}: the private key does not match" in served.stderr
    assert "Traceback" not in served.stderr
