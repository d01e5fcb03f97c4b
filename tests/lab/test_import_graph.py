"""No import circles in ``src/trustlab`` (issue 21): the layers only ever point down.

An import circle means two modules cannot be understood, tested or moved apart,
and Python resolves it only by the luck of which one is imported first. This
test builds the module import graph with the standard library's ``ast`` and
fails on every strongly connected component of more than one module (Tarjan),
printing one circle through it.

What counts as an edge from module ``m`` to module ``t`` (both in trustlab):

- every ``import``/``from ... import`` anywhere in ``m``: at module level, inside
  functions and classes, under ``if TYPE_CHECKING:`` and ``try:``. Moving an import
  into a function hides a circle from the interpreter, not from the reader;
- ``from X import Y`` goes to ``X.Y`` where ``X.Y`` is a module of its own, and to
  ``X`` (for a name defined in ``X``, or its ``__init__``) otherwise; relative
  imports are resolved against ``m``'s package first;
- ``lazy_module("trustlab...")`` and ``importlib.import_module("trustlab...")``
  with a literal name: an import deferred to first use is still an import.
  Names computed at run time (plugin discovery: ``plugins.py``, the experiment
  registry, the CLI's subcommand loader) are not edges: the loader knows no
  plugin by name, which is the point of a plugin.

Packages: the node ``trustlab.pkg`` is ``pkg/__init__.py``. ``import a.b.c``
makes Python run ``a/__init__`` and ``a/b/__init__`` too, but that implicit
parent import is not an edge: a package whose ``__init__`` re-exports its
submodules, while those submodules import each other as ``trustlab.pkg.sub``,
is not a circle. It is one only when a submodule imports the package itself
(``from trustlab.pkg import name`` for a name defined in ``__init__``, or
``from . import name``) while ``__init__`` imports that submodule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "trustlab"
LAZY_LOADERS = frozenset({"lazy_module", "import_module"})


def _module_files(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST, name: str, is_package: bool, modules: dict[str, Path]) -> Iterator[str]:
    """The trustlab modules that module ``name`` imports, by the rules above."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[:-(node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in modules else target
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname in LAZY_LOADERS:
                yield node.args[0].value


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module → the trustlab modules it imports (self-imports dropped)."""
    modules = _module_files(src)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = _imports(tree, name, path.name == "__init__.py", modules)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted; only those of size > 1."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest circle through the component's first module (breadth-first inside it)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component  # unreachable for a strongly connected component


def test_checker_finds_a_circle_through_a_package_init(tmp_path: Path) -> None:
    """The checker itself: a package whose submodule imports a name from its ``__init__`` is a circle."""
    pkg = tmp_path / ROOT / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / ROOT / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from trustlab.pkg.a import f\nCONSTANT = 1\n")
    (pkg / "a.py").write_text("def f():\n    from . import CONSTANT\n    return CONSTANT\n")
    (pkg / "b.py").write_text("import trustlab.pkg.a\n")  # a sibling import: not a circle
    (tmp_path / ROOT / "c.py").write_text("from trustlab.lazy import lazy_module\nd = lazy_module('trustlab.d')\n")
    (tmp_path / ROOT / "d.py").write_text("def g():\n    from trustlab import c\n")
    graph = import_graph(tmp_path)
    assert graph["trustlab.pkg.b"] == {"trustlab.pkg.a"}
    assert strongly_connected(graph) == [["trustlab.c", "trustlab.d"], ["trustlab.pkg", "trustlab.pkg.a"]]
    assert one_cycle(graph, ["trustlab.c", "trustlab.d"]) == ["trustlab.c", "trustlab.d", "trustlab.c"]


def test_src_has_no_import_circles() -> None:
    graph = import_graph()
    assert len(graph) > 100, "the checker found too few modules: is SRC right?"
    circles = [" -> ".join(one_cycle(graph, c)) + f"   ({len(c)} modules: {', '.join(c)})"
               for c in strongly_connected(graph)]
    assert not circles, "import circles in src/trustlab:\n" + "\n".join(circles)
