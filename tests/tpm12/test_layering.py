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


def _module_graph() -> dict[str, set[str]]:
    """tpm12 module -> the tpm12 modules it imports (at module level or inside a function)."""
    prefix = "trustlab.devices.tpm12."
    mods = {p: prefix + p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".") for p in ROOT.rglob("*.py")}
    known = set(mods.values())
    graph = {}
    for path, name in mods.items():
        deps = set()
        for n in _imports(path):
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != name and not n.endswith("__init__"):
                deps.add(n)
        graph[name] = deps
    return graph


def test_no_import_circle_among_tpm12_modules() -> None:
    """Issue 21: no module of the TPM 1.2 engine reaches itself through imports (the command modules
    share the PCR composite, the NV areas and the version through pcrs.py, nvareas.py and version.py)."""
    graph = _module_graph()
    assert "trustlab.devices.tpm12.pcrs" in graph["trustlab.devices.tpm12.commands.storage"]

    def cycle_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for dep in graph.get(node, ()):
                if dep == start:
                    return path + [dep]
                if dep not in seen:
                    seen.add(dep)
                    stack.append((dep, path + [dep]))
        return None

    circles = [c for m in sorted(graph) if (c := cycle_from(m))]
    assert not circles, circles[0]
