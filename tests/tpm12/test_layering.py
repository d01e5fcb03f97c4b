"""The engine sits above its command registry: nothing below it imports it (issue 14, no cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import trustlab.devices.tpm12 as pkg

ROOT = Path(pkg.__file__).parent
ABOVE_ENGINE = {"engine.py", "client.py", "served.py", "__init__.py", "socket_tpm.py"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_registry_and_commands_do_not_import_the_engine() -> None:
    below = [p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).as_posix() not in ABOVE_ENGINE]
    assert any(p.name == "registry.py" for p in below)
    offenders = [p.relative_to(ROOT).as_posix() for p in below
                 if any(n == "trustlab.devices.tpm12.engine" or n.startswith("trustlab.devices.tpm12.engine.")
                        for n in _imports(p))]
    assert offenders == []
