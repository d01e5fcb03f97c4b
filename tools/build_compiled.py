"""Compile trustlab's hot pure-Python modules with mypyc, in place; optional by design.

    .venv/bin/python tools/build_compiled.py [--clean]

``make setup`` runs this after installing the package (mypy, which carries mypyc,
is pinned in the ``compiled`` extra). For each module of
``trustlab.compiled.COMPILED_MODULES`` it builds the extension beside the ``.py``
in ``src/`` and writes the stamp naming the source it was built from, so a later
edit of the source is noticed and the ``.py`` imported instead (see
:mod:`trustlab.compiled`). Anything that goes wrong - no mypyc, no C compiler, a
type error mypyc refuses, an extension that does not import - leaves no extension
behind and exits 0 with one line saying why (also written into the stamps, which
then name no source, so make does not retry until a source changes): trustlab
then runs its pure-Python modules, with the same results, only slower.
``--clean`` removes the builds and stamps.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from trustlab.compiled import COMPILED_MODULES, PURE_ENV, source_digest, stamp_path  # noqa: E402

_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
paths, target = sys.argv[1:-1], sys.argv[-1]
setup(name="trustlab-compiled",
      script_args=["build_ext", "--inplace", "--build-temp", target + "/temp", "--build-lib", target + "/lib"],
      ext_modules=mypycify(["--follow-imports=skip", *paths], opt_level="3", target_dir=target + "/c"))
"""

# imported in a fresh interpreter: the extension loads (and a path's nodes come out as hashing gives)
_SMOKE = """
import hashlib, sys
from trustlab.compiled import is_compiled
from trustlab.devices.tpm12 import merkle
assert is_compiled(merkle), merkle.__file__
sib = [hashlib.sha1(bytes([i])).digest() for i in range(5)]
leaf = merkle.counter_leaf(7)
assert merkle.path_nodes(9, leaf, b"".join(sib))[-1] == merkle.root_from_path(9, leaf, sib)
"""


def _source(module: str) -> Path:
    return SRC.joinpath(*module.split(".")).with_suffix(".py")


def _builds(source: Path) -> list[Path]:
    """The extension files a build left beside ``source`` (the module and mypyc's shared library)."""
    return [p for suffix in importlib.machinery.EXTENSION_SUFFIXES
            for p in source.parent.glob(f"{source.stem}*{suffix}")
            if p.name.startswith((source.stem + ".", source.stem + "__mypyc."))]


def clean() -> None:
    for module in COMPILED_MODULES:
        source = _source(module)
        for path in _builds(source) + [stamp_path(source)]:
            path.unlink(missing_ok=True)


def build() -> str:
    """Build every module; returns what happened, in one line."""
    clean()
    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed (pip install '.[compiled]'): the pure-Python modules are used"
    sources = [_source(m) for m in COMPILED_MODULES]
    with tempfile.TemporaryDirectory(prefix="trustlab-mypyc-") as tmp:
        run = subprocess.run([sys.executable, "-c", _SETUP, *[str(s.relative_to(SRC)) for s in sources], tmp],
                             cwd=SRC, capture_output=True, text=True)
    if run.returncode:
        clean()
        last = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["(no output)"]
        return f"mypyc build failed ({last[0][:200]}): the pure-Python modules are used"
    for source in sources:  # (before the smoke test: without its stamp a build is not used)
        stamp_path(source).write_text(source_digest(source) + "\n")
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    smoke = subprocess.run([sys.executable, "-c", _SMOKE], cwd=ROOT, capture_output=True, text=True,
                           env={**env, "PYTHONPATH": str(SRC)})
    if smoke.returncode:
        clean()
        last = smoke.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return f"the compiled modules do not load ({last[0][:200]}): the pure-Python modules are used"
    return f"compiled with mypyc: {', '.join(COMPILED_MODULES)}"


def _record_unbuilt(why: str) -> None:
    """Stamps that name no source (so no build is used) and say why: make does not retry until a source changes."""
    for module in COMPILED_MODULES:
        stamp_path(_source(module)).write_text(f"not compiled: {why}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="compile trustlab's hot modules with mypyc (optional; "
                                     "on any failure the pure-Python modules are used)")
    parser.add_argument("--clean", action="store_true", help="remove the compiled builds and their stamps")
    args = parser.parse_args(argv)
    if args.clean:
        clean()
        print("compiled builds removed: the pure-Python modules are used")
        return 0
    said = build()
    if not said.startswith("compiled"):
        _record_unbuilt(said)
    print(said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
