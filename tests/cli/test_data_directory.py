"""Where the data goes without ``--root``: never inside the installed package or its virtualenv,
but where comparable services keep theirs (:func:`spoolq.settings.server.default_root`); said on
start; not made by ``check-config``; and a directory spoolq cannot write is named with its owner
and the user spoolq runs as."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spoolq
from spoolq.settings.server import SYSTEM_ROOT, default_root, load_settings, root_origin
from tests.cli.run import CHECKOUT


@pytest.mark.parametrize(("environ", "euid", "root", "why"), [
    ({"STATE_DIRECTORY": "/var/lib/spoolq:/var/lib/other"}, 997, "/var/lib/spoolq", "StateDirectory"),
    ({"STATE_DIRECTORY": "/srv/q", "HOME": "/home/ann"}, 0, "/srv/q", "StateDirectory"),
    ({"HOME": "/root"}, 0, str(SYSTEM_ROOT), "run as root"),
    ({"INVOCATION_ID": "a1b2", "HOME": "/"}, 997, str(SYSTEM_ROOT), "systemd service"),
    ({"HOME": "/home/ann", "XDG_DATA_HOME": "/home/ann/data"}, 1000, "/home/ann/data/spoolq", "XDG_DATA_HOME"),
    ({"HOME": "/home/ann", "XDG_DATA_HOME": "relative/is/ignored"}, 1000, "/home/ann/.local/share/spoolq",
     "~/.local/share/spoolq"),
    ({"HOME": "/home/ann"}, 1000, "/home/ann/.local/share/spoolq", "~/.local/share/spoolq"),
])
def test_the_default_as_comparable_services_choose_it(environ: dict[str, str], euid: int, root: str,
                                                      why: str) -> None:
    choice = default_root(environ, euid)
    assert choice.path == Path(root) and why in choice.reason


def test_never_inside_the_package_or_its_environment() -> None:
    package = Path(spoolq.__file__).resolve().parent
    for environ in ({"HOME": str(Path.home())}, {"STATE_DIRECTORY": "/var/lib/spoolq"}, {}):
        root = load_settings({}, environ=environ).root.resolve()
        assert package not in root.parents and Path(sys.prefix).resolve() not in root.parents, root


def test_root_and_spoolq_root_win_and_say_so() -> None:
    env = {"SPOOLQ_ROOT": "/srv/a", "STATE_DIRECTORY": "/var/lib/spoolq"}
    assert load_settings({}, environ=env).root == Path("/srv/a") and root_origin({}, env) == "SPOOLQ_ROOT"
    assert load_settings({"root": Path("/srv/b")}, environ=env).root == Path("/srv/b")
    assert root_origin({"root": Path("/srv/b")}, env) == "--root"


def _spoolq(*args: str, env: dict[str, str], setpriv: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    clean.update(PYTHONPATH=str(CHECKOUT / "service"), **env)
    return subprocess.run([*setpriv, sys.executable, "-m", "spoolq.cli", *args], capture_output=True, text=True,
                          env=clean, timeout=60)


def test_check_config_does_not_make_the_default_and_serve_says_where_it_is(tmp_path: Path) -> None:
    state = tmp_path / "state" / "spoolq"
    done = _spoolq("check-config", env={"STATE_DIRECTORY": str(state)})
    assert done.returncode == 0, done.stdout
    assert f"ok: settings (root={state}," in done.stdout
    assert f"ok: root {state} does not exist yet; spoolq serve makes it" in done.stdout
    assert not state.exists() and not state.parent.exists()
    (tmp_path / "bad.yaml").write_text("queue: []\n")  # serve stops at the check, after its first line
    served = _spoolq("serve", "--config", str(tmp_path / "bad.yaml"), env={"STATE_DIRECTORY": str(state)})
    assert served.returncode == 2
    assert served.stderr.splitlines()[0] == f"spoolq: data directory {state} (systemd's StateDirectory)"


needs_caps = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root and setpriv(1) to drop the capability to write anywhere")
#: root without the capabilities that let it write into a directory it does not own
NOT_ALL_POWERFUL = ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner")


@needs_caps
def test_a_directory_it_cannot_write_is_named_with_its_owner_and_the_fix(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, 10001, 10001)
    data.chmod(0o755)
    for root, exists in ((data, True), (data / "sub", False)):
        done = _spoolq("check-config", "--root", str(root), env={}, setpriv=NOT_ALL_POWERFUL)
        assert done.returncode == 3, done.stdout
        (failed,) = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        said = "exists but is not writable (Permission denied)" if exists else "cannot be created in"
        assert said in failed and "it belongs to uid 10001 and spoolq runs as uid 0" in failed, failed
        assert "chown -R 0 " in failed, failed
        served = _spoolq("serve", "--root", str(root), "--port", "1", env={}, setpriv=NOT_ALL_POWERFUL)
        assert served.returncode == 3 and "it belongs to uid 10001 and spoolq runs as uid 0" in served.stderr
        assert "Traceback" not in served.stderr
    assert not (data / "sub").exists()
