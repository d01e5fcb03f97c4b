"""The serving layer's shape (issue 21): its own package, the two generations' backends peers beneath it.

Checked on the source (every import, module level or inside a function):
neither backend imports the other generation; no import circle within
``trustlab.serving``, nor between ``cli/flagship`` and ``cli/_forkserver``;
the text tables sit below everything that uses them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import trustlab

SRC = Path(trustlab.__file__).parent


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    name = ".".join(rel.parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _imports(path: Path) -> set[str]:
    pkg = _module(path) if path.name == "__init__.py" else _module(path).rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def _graph(prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    modules = {_module(p): p for p in SRC.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        if name.startswith(prefixes):
            graph[name] = {i for i in _imports(path) if i in modules and i != name and i.startswith(prefixes)}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    seen: set[str] = set()
    found = []

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            found.append(path[path.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])

    for start in sorted(graph):
        visit(start, [])
    return found


def test_neither_generation_imports_the_other() -> None:
    for path in (SRC / "serving" / "tpm12").rglob("*.py"):
        bad = {i for i in _imports(path) if i.startswith(("trustlab.serving.tpm2", "trustlab.devices.tpm2"))}
        assert not bad, (path.name, bad)
    for path in (SRC / "serving" / "tpm2").rglob("*.py"):
        bad = {i for i in _imports(path) if i.startswith(("trustlab.serving.tpm12", "trustlab.devices.tpm12"))}
        assert not bad, (path.name, bad)


def test_no_import_circles_in_serving_and_the_flagship() -> None:
    assert _cycles(_graph(("trustlab.serving",))) == []
    assert _cycles(_graph(("trustlab.cli.flagship", "trustlab.cli._forkserver", "trustlab.cli._flagship_run"))) == []


def test_text_tables_sit_below_their_users() -> None:
    assert not {i for i in _imports(SRC / "textable.py") if i.startswith("trustlab")}
    for package in ("experiments", "validation", "report"):
        for path in (SRC / package).rglob("*.py"):
            assert "trustlab.cli._output" not in _imports(path), path


def test_the_proxy_is_generation_blind() -> None:
    """What a command goes through is its generation's command path (serving/path.py): the proxy imports
    no TPM 2.0 command table, extension hook, object table or resource manager, and no TPM 1.2 handle table."""
    specific = ("trustlab.devices.tpm2.commands", "trustlab.devices.tpm2.extensions", "trustlab.devices.tpm2.objects",
                "trustlab.devices.tpm2.wire", "trustlab.serving.tpm2.rm", "trustlab.serving.tpm12.handles")
    imported = _imports(SRC / "serving" / "proxy.py")
    assert not {i for i in imported if i.startswith(specific)}, imported
