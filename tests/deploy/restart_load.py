"""Mixed client load across restarts of a real ``spoolq serve``, and what the clients saw.

The harness plays systemd's part: it binds the HTTP and Disque sockets once and starts each
generation of ``spoolq serve`` with them (``LISTEN_PID``/``LISTEN_FDS``/``LISTEN_FDNAMES``, the
sockets at fd 3 and 4), exactly as ``spoolq-http.socket`` and ``spoolq-disque.socket`` do.
The code is served from a copy of ``service/`` so that an upgrade can change it on disk.

The load, all clients as users run them (bounded in count and time, loopback only):

* EmoDB senders: ``curl`` without retries, one process per send;
* EmoDB pollers: ``curl`` long polls (``wait=2``), then ``curl`` acks;
* SQS senders and receivers (``WaitTimeSeconds=2``, then ``DeleteMessageBatch``): boto3 with its
  default configuration (its own retries);
* Disque: ADDJOB, blocking GETJOB (``TIMEOUT 2000``), ACKJOB with redis-py's defaults.

Every body is unique; a send counts as sent once the client got its success. At the end the
senders stop and every send still in flight gets its answer, the pollers drain the queues (up to
60 s), then short polls sweep what is left: *lost* is sent and never received, *late* received
only by that sweep (the store held it, the load's long polls did not get it within the drain),
*duplicates* received more than once (at-least-once allows them: a claim cut off by a restart is
delivered again), *errors* every failure a client reported (curl's exit status or HTTP status,
boto3's or redis-py's exception after their own retries), *refused* those that were "connection
refused".

``python -m tests.deploy.restart_load --how plain|restart|upgrade|usr2`` prints the figures and
exits 1 if anything was lost or late (``plain`` stops the server and starts a new one that binds
the ports itself: the old way).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import redis
import requests

from spoolq.access.listener_gate import is_gated

CHECKOUT = Path(__file__).resolve().parents[2]
CURL = shutil.which("curl") or "curl"


@dataclass
class Tally:
    sent: dict[str, int] = field(default_factory=dict)  # body -> door index, once acknowledged
    received: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    in_answer_duplicates: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok_send(self, body: str) -> None:
        with self.lock:
            self.sent[body] = 1

    def got(self, bodies: list[str]) -> None:
        with self.lock:
            if len(set(bodies)) != len(bodies):
                self.in_answer_duplicates += 1
            self.received.update(bodies)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)

    def figures(self) -> dict[str, int]:
        with self.lock:
            lost = [b for b in self.sent if self.received[b] == 0]
            return {"sent": len(self.sent), "received": sum(1 for b in self.sent if self.received[b]),
                    "lost": len(lost), "duplicates": sum(1 for b in self.sent if self.received[b] > 1),
                    "errors": len(self.errors),
                    "refused": sum(1 for e in self.errors if "refused" in e.lower() or "exit 7" in e),
                    "duplicates_within_an_answer": self.in_answer_duplicates}


def _high_dup(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_DUPFD, 100)


@dataclass
class Generations:
    """Generations of ``spoolq serve`` on sockets this object holds (systemd's part)."""

    workdir: Path
    workers: int = 2
    threads: int = 16
    code: Path = field(init=False)
    http: socket.socket = field(init=False)
    disque: socket.socket = field(init=False)
    proc: subprocess.Popen[bytes] | None = None
    port: int = field(init=False)
    disque_port: int = field(init=False)

    def __post_init__(self) -> None:
        self.code = self.workdir / "code"
        shutil.copytree(CHECKOUT / "service" / "spoolq", self.code / "spoolq",
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.http = self._listen()
        self.disque = self._listen()
        self.port, self.disque_port = int(self.http.getsockname()[1]), int(self.disque.getsockname()[1])

    @staticmethod
    def _listen() -> socket.socket:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(4096)
        return s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SPOOLQ_", "LISTEN_", "GUNICORN_")) and k != "PROMETHEUS_MULTIPROC_DIR"}
        env["PYTHONPATH"] = str(self.code)
        return env

    def _cmd(self) -> list[str]:
        return [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(self.workdir / "root"),
                "--workers", str(self.workers), "--threads", str(self.threads), "--node-id", "restart"]

    def start(self, *, inherit: bool = True) -> None:
        """A new generation: on the held sockets (``inherit``), or binding the ports itself."""
        log = open(self.workdir / "server.log", "ab")  # noqa: SIM115 - the child keeps it
        if inherit:
            fds = (_high_dup(self.http.fileno()), _high_dup(self.disque.fileno()))

            def onto_3_and_4() -> None:
                os.dup2(fds[0], 3)
                os.dup2(fds[1], 4)

            env = self._env() | {"LISTEN_FDS": "2", "LISTEN_FDNAMES": "http:disque"}
            self.proc = subprocess.Popen(["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh", *self._cmd()],
                                         pass_fds=(3, 4), preexec_fn=onto_3_and_4, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            for fd in fds:
                os.close(fd)
        else:
            cmd = [*self._cmd(), "--port", str(self.port), "--disque-port", str(self.disque_port)]
            self.proc = subprocess.Popen(cmd, env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        log.close()
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"spoolq serve exited: {(self.workdir / 'server.log').read_text()[-2000:]}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url + "/readyz", timeout=5).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError("spoolq serve did not become ready")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        # sockets the service manager keeps are handed on as they were: a stop never gates them
        assert all(sock.fileno() < 0 or not is_gated(sock) for sock in (self.http, self.disque))

    def release_sockets(self) -> None:
        """Give up the held sockets (the ``plain`` way: the next generation binds them itself)."""
        self.http.close()
        self.disque.close()

    def change_code(self, version: str) -> None:
        """New code on disk: the package's version (what ``/docs/openapi.json`` reports)."""
        init = self.code / "spoolq" / "__init__.py"
        text = init.read_text()
        lines = [f'__version__ = "{version}"' if line.startswith("__version__") else line
                 for line in text.splitlines()]
        init.write_text("\n".join(lines) + "\n")

    def version(self) -> str:
        return str(requests.get(self.url + "/docs/openapi.json", timeout=10).json()["info"]["version"])

    def usr2_upgrade(self) -> None:
        """gunicorn's upgrade: SIGUSR2 starts a new generation on the same sockets (the code now on
        disk), then the old one is stopped with SIGTERM once the new one serves."""
        assert self.proc is not None
        old = self.proc
        before = set(_children(old.pid))  # its workers run the same command line
        old.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 60
        new_pid = 0
        while time.monotonic() < deadline and not new_pid:
            for pid in _children(old.pid):
                with contextlib.suppress(OSError):
                    if pid not in before and b"-m\0spoolq.cli" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        new_pid = pid
            time.sleep(0.1)
        assert new_pid, "no new master after SIGUSR2"
        time.sleep(4)  # the new master boots its workers and its Disque listener
        old.send_signal(signal.SIGTERM)
        old.wait(timeout=60)
        # the old master's stop left the sockets open to all
        assert all(sock.fileno() < 0 or not is_gated(sock) for sock in (self.http, self.disque))
        self.proc = _Adopted(new_pid)  # type: ignore[assignment]


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
    return out


def _kill_leftovers(marker: str) -> None:
    """SIGKILL every process whose command line names ``marker`` (this harness's root)."""
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                    os.kill(int(entry), signal.SIGKILL)


class _Adopted:
    """A process that is not our child (a promoted master): signals and waiting by pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return 0
        return None

    def send_signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.05)
        return 0


# ------------------------------------------------------------------ the clients


def _curl(*args: str) -> tuple[int, str]:
    done = subprocess.run([CURL, "-sS", "--max-time", "60", *args], capture_output=True, text=True, timeout=90)
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr.strip()


class Load:
    def __init__(self, gens: Generations, tally: Tally) -> None:
        self.gens, self.tally = gens, tally
        self.sending = threading.Event()
        self.polling = threading.Event()
        self.senders: list[threading.Thread] = []
        self.pollers: list[threading.Thread] = []
        self.sqs_url = ""
        self.last_emo_poll = time.monotonic()

    def start(self) -> None:
        self.sending.set()
        self.polling.set()
        sqs = self._sqs()
        self.sqs_url = sqs.create_queue(QueueName="restart-sqs")["QueueUrl"]
        for threads, targets in ((self.senders, (self._emodb_sender, self._emodb_sender, self._sqs_sender,
                                                 self._disque_sender)),
                                 (self.pollers, (self._emodb_poller, self._sqs_receiver, self._disque_worker))):
            for target in targets:
                t = threading.Thread(target=self._guard(target), daemon=True)
                t.start()
                threads.append(t)

    def _guard(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except Exception as e:  # a harness bug must show, not hang the test
                self.tally.error(f"harness {fn.__name__}: {type(e).__name__}: {e}")
        return run

    def stop_sending(self) -> None:
        """Stop the senders and wait for the sends they have in flight (each is bounded: curl's
        ``--max-time``, boto3's and redis-py's retries), so that every send that will count as
        sent has counted before :meth:`drain` looks at what is still to be received."""
        self.sending.clear()
        for t in self.senders:
            t.join(timeout=120)

    def drain(self, timeout: float = 60) -> None:
        """Let the pollers run until every sent body was received (or ``timeout``), then stop them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.tally.figures()["lost"]:
            time.sleep(0.5)
        self.polling.clear()
        for t in self.pollers:
            t.join(timeout=60)

    def sweep(self) -> int:
        """After the drain, short polls of every queue until they come back empty: the bodies the
        load's own (long) polls never got, although the store still held them."""
        late = 0
        for _ in range(100):
            got = requests.get(f"{self.gens.url}/queue/1/restart-emo/poll?ttl=300&limit=100", timeout=30).json()
            sqs = self._sqs().receive_message(QueueUrl=self.sqs_url,  # type: ignore[attr-defined]
                                              MaxNumberOfMessages=10).get("Messages", [])
            with redis.Redis(host="127.0.0.1", port=self.gens.disque_port, protocol=2) as r:
                jobs = r.execute_command("GETJOB", "NOHANG", "COUNT", 100, "FROM", "restart-dq") or []
            bodies = [m["payload"] for m in got] + [m["Body"] for m in sqs] + [j[2].decode() for j in jobs]
            if not bodies:
                break
            with self.tally.lock:
                late += sum(1 for b in bodies if b in self.tally.sent and self.tally.received[b] == 0)
            self.tally.got(bodies)
        return late

    def _sqs(self) -> object:
        return boto3.client("sqs", endpoint_url=self.gens.url, region_name="us-east-1",
                            aws_access_key_id="any", aws_secret_access_key="any")

    def _emodb_sender(self) -> None:
        while self.sending.is_set():
            body = f"emo-{uuid.uuid4().hex}"
            code, out = _curl("-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H",
                              "Content-Type: application/json", "-d", json.dumps(body),
                              f"{self.gens.url}/queue/1/restart-emo/send")
            if code != 0:
                self.tally.error(f"curl send exit {code}: {out}")
            elif out != "200":
                self.tally.error(f"curl send HTTP {out}")
            else:
                self.tally.ok_send(body)

    def _emodb_poller(self) -> None:
        while self.polling.is_set():
            code, out = _curl(f"{self.gens.url}/queue/1/restart-emo/poll?ttl=30&limit=10&wait=2")
            self.last_emo_poll = time.monotonic()
            if code != 0:
                self.tally.error(f"curl poll exit {code}: {out}")
                continue
            try:
                messages = json.loads(out)
                assert isinstance(messages, list)
            except (ValueError, AssertionError):
                self.tally.error(f"curl poll answered {out[:200]!r}")
                continue
            if not messages:
                continue
            self.tally.got([m["payload"] for m in messages])
            code, out = _curl("-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H",
                              "Content-Type: application/json", "-d", json.dumps([m["id"] for m in messages]),
                              f"{self.gens.url}/queue/1/restart-emo/ack")
            if code != 0 or out != "200":
                self.tally.error(f"curl ack exit {code}: {out}")

    def _sqs_sender(self) -> None:
        sqs = self._sqs()
        while self.sending.is_set():
            body = f"sqs-{uuid.uuid4().hex}"
            try:
                sqs.send_message(QueueUrl=self.sqs_url, MessageBody=body)  # type: ignore[attr-defined]
            except Exception as e:
                self.tally.error(f"boto3 SendMessage: {type(e).__name__}: {e}")
            else:
                self.tally.ok_send(body)

    def _sqs_receiver(self) -> None:
        sqs = self._sqs()
        while self.polling.is_set():
            try:
                got = sqs.receive_message(QueueUrl=self.sqs_url, MaxNumberOfMessages=10,  # type: ignore[attr-defined]
                                          WaitTimeSeconds=2).get("Messages", [])
                if got:
                    self.tally.got([m["Body"] for m in got])
                    sqs.delete_message_batch(QueueUrl=self.sqs_url, Entries=[  # type: ignore[attr-defined]
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
            except Exception as e:
                self.tally.error(f"boto3 Receive/Delete: {type(e).__name__}: {e}")

    def _disque_sender(self) -> None:
        with redis.Redis(host="127.0.0.1", port=self.gens.disque_port, protocol=2) as r:
            while self.sending.is_set():
                body = f"dq-{uuid.uuid4().hex}"
                try:
                    r.execute_command("ADDJOB", "restart-dq", body, 0)
                except redis.RedisError as e:
                    self.tally.error(f"redis ADDJOB: {type(e).__name__}: {e}")
                else:
                    self.tally.ok_send(body)
                time.sleep(0.01)

    def _disque_worker(self) -> None:
        with redis.Redis(host="127.0.0.1", port=self.gens.disque_port, protocol=2) as r:
            while self.polling.is_set():
                try:
                    jobs = r.execute_command("GETJOB", "TIMEOUT", 2000, "COUNT", 10, "FROM", "restart-dq")
                    if jobs:
                        self.tally.got([j[2].decode() for j in jobs])
                        r.execute_command("ACKJOB", *[j[1] for j in jobs])
                except redis.RedisError as e:
                    self.tally.error(f"redis GETJOB/ACKJOB: {type(e).__name__}: {e}")


@contextlib.contextmanager
def loaded(workdir: Path, *, inherit: bool = True) -> Iterator[tuple[Generations, Load, Tally]]:
    gens = Generations(workdir)
    if not inherit:
        gens.release_sockets()  # the old way: each generation binds the ports itself
    gens.start(inherit=inherit)
    tally = Tally()
    load = Load(gens, tally)
    try:
        load.start()
        yield gens, load, tally
    finally:
        load.stop_sending()
        load.polling.clear()
        try:
            gens.stop()
        finally:
            gens.release_sockets()
            _kill_leftovers(str(workdir / "root"))


def run(how: str, workdir: Path, rounds: int = 2, settle: float = 3.0) -> dict[str, int]:
    """Load, ``rounds`` restarts the ``how`` way under it, drain; the clients' figures."""
    with loaded(workdir, inherit=how != "plain") as (gens, load, tally):
        time.sleep(settle)
        for i in range(rounds):
            if how == "plain":
                gens.stop()
                gens.start(inherit=False)  # binds the ports again: clients are refused meanwhile
            elif how == "restart":
                gens.stop()
                gens.start()
            elif how == "upgrade":
                gens.change_code(f"9.9.{i}")
                gens.stop()
                gens.start()
                assert gens.version() == f"9.9.{i}"
            elif how == "usr2":
                gens.change_code(f"9.8.{i}")
                gens.usr2_upgrade()
                assert gens.version() == f"9.8.{i}"
            time.sleep(settle)
        load.stop_sending()
        load.drain()
        late = load.sweep() if tally.figures()["lost"] else 0
        figures = tally.figures()
        figures["rounds"] = rounds
        figures["late"] = late
        if tally.errors:
            print("first errors:", *tally.errors[:5], sep="\n  ", file=sys.stderr)
        if figures["lost"]:
            with tally.lock:
                missing = [b for b in tally.sent if tally.received[b] == 0][:5]
            for body in missing:  # where is it? (message files hold their bodies as bytes)
                where = subprocess.run(["grep", "-rl", body, str(workdir / "root")], capture_output=True, text=True)
                print(f"not received: {body} in {where.stdout.strip() or 'no file'}", file=sys.stderr)
        return figures


def main() -> int:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--how", choices=["plain", "restart", "upgrade", "usr2"], default="restart")
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="spoolq-restart-") as tmp:
        figures = run(a.how, Path(tmp), a.rounds)
    print(json.dumps({"how": a.how, **figures}))
    return 1 if figures["lost"] or figures["late"] else 0


if __name__ == "__main__":
    sys.exit(main())
