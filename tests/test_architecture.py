"""The floors of ``service/spoolq`` (docs/architecture.md), checked from the code's own imports.

Every ``import`` counts, function-level and ``TYPE_CHECKING`` ones included: a lazy import hides
a circle from Python, not from a reader. ``from package import module`` counts as an import of
the module (not of the package's ``__init__``, which only hands names on).

* no import circle anywhere in the service;
* the store imports nothing of the service but ``spoolq.errors``, and inside the store no module
  imports one of a higher floor (:data:`STORE_FLOORS`);
* the modules several doors share import no door;
* the doors stand side by side: the Disque door imports nothing of HTTP, and no HTTP door (EmoDB,
  MQ, SQS) or the console imports another (the console reads the EmoDB body codec,
  ``http.emodb_wire``, to store a test message in the EmoDB door's own form).
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1] / "service"

#: the store's floors, lowest first: a store module imports only its own floor and those below
STORE_FLOORS: list[set[str]] = [
    {"layout", "model", "config", "codec", "fileops", "group_commit", "journal", "watch", "markerlock", "recordlock",
     "cursor", "ticketed_flush",
     "message_files", "filesystems", "events", "process", "trash"},
    {"contract", "handle"},
    {"queues"},
    {"archive", "deleting", "reading", "sending", "claiming", "maintenance", "moves", "recovery", "batches",
    },
    {"jobs"},
    {"filestore"},
    {""},  # the package itself (spoolq.store)
]
#: what several doors share; none of it imports a door
SHARED = {"spoolq.errors", "spoolq.settings", "spoolq.auth", "spoolq.metrics", "spoolq.counting",
          "spoolq.queue_names", "spoolq.job_ids", "spoolq.queue_settings", "spoolq.rates"}
DOORS = {"emodb": ("spoolq.http.emodb", "spoolq.http.emodb_settings", "spoolq.http.emodb_batches",
                   "spoolq.http.emodb_wire"),
         "mq": ("spoolq.http.mq",), "sqs": ("spoolq.http.sqs",), "console": ("spoolq.http.console",),
         "disque": ("spoolq.disque",)}
#: the one door module another reads (see the module docstring)
ALLOWED_ACROSS = {("console", "spoolq.http.emodb_wire")}


def module_name(path: Path) -> str:
    parts = path.relative_to(SERVICE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
            # ``from package import module`` depends on the module, not on the package's face
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            names = submodules if len(submodules) == len(node.names) else [base, *submodules]
        found.update(n for n in names if n in modules)
    return found - {name}


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in (SERVICE / "spoolq").rglob("*.py")}
    return {name: imports_of(path, name, set(files)) for name, path in files.items()}


def door_of(module: str) -> str | None:
    for door, prefixes in DOORS.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return door
    return None


def test_no_import_circle() -> None:
    g = graph()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(g[node]):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_the_store_stands_alone_in_floors() -> None:
    floor = {f"spoolq.store{'.' + m if m else ''}": i for i, ms in enumerate(STORE_FLOORS) for m in ms}
    wrong = []
    for module, imported in graph().items():
        if not (module == "spoolq.store" or module.startswith("spoolq.store.")):
            continue
        assert module in floor, f"{module} is on no floor of STORE_FLOORS"
        for other in imported:
            if other.startswith("spoolq.store"):
                if other in floor and floor[other] > floor[module]:
                    wrong.append(f"{module} -> {other} (up)")
            elif other not in ("spoolq", "spoolq.errors"):
                wrong.append(f"{module} -> {other} (outside the store)")
    assert wrong == []


def test_what_doors_share_imports_no_door() -> None:
    g = graph()
    wrong = [f"{m} -> {o}" for m in SHARED for o in g[m]
             if o.startswith(("spoolq.http", "spoolq.disque", "spoolq.cli"))]
    assert wrong == []


def test_doors_stand_side_by_side() -> None:
    wrong = []
    for module, imported in graph().items():
        door = door_of(module)
        if door is None:
            continue
        for other in imported:
            theirs = door_of(other)
            if (door == "disque" and other.startswith("spoolq.http")) or (theirs not in (None, door) and (door, other) not in ALLOWED_ACROSS):
                wrong.append(f"{module} -> {other}")
    assert wrong == []
