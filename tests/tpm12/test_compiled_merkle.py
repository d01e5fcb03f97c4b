"""The mypyc build of ``merkle`` gives exactly what its source gives, and is used only while it matches.

``make setup`` may compile :mod:`trustlab.devices.tpm12.merkle` (``tools/build_compiled.py``;
optional, see :mod:`trustlab.compiled`). The reference for the compiled module is the
same module run from its ``.py`` (``TRUSTLAB_PURE_PYTHON=1``): a hash-tree workload -
increments, reads, arithmetic adds, a hostile host's tampered and rolled-back paths,
trees going from a dict to slots midway, copies and pickles of the node storage - runs
in one process of each kind, and every answer, error, charge and node must agree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from trustlab import compiled
from trustlab.devices.tpm12 import merkle

SRC = Path(compiled.__file__).resolve().parent.parent
SOURCE = Path(merkle.__file__).with_name("merkle.py")

# Run in a fresh interpreter; prints whether merkle is compiled, then a digest of everything simulated.
SCENARIO = r"""
import copy, hashlib, pickle, random, sys
from trustlab.compiled import is_compiled
from trustlab.devices.tpm12 import merkle
merkle.DENSIFY_AT, merkle.MEMO_DENSIFY_AT = 300, 64  # node storage and TPM memo go dense midway
from trustlab.apps.counters import schemes
from trustlab.apps.counters.base import VerificationError
from trustlab.devices.tpm12.errors import TpmError
from trustlab.timing import registry
out = []
for depth, n, k, seed in ((12, 700, 1, 1), (20, 400, 5, 2)):
    built = schemes.build("hashtree", registry.load("atmel-counters-2010"), 1 << depth, seed=seed, attest_every=k)
    p, v, rng = built.prover, built.verifier, random.Random(seed)
    for i in range(n):
        c, nonce = rng.randrange(1 << depth) if i % 3 else rng.randrange(8), rng.randbytes(20)
        try:
            if i % 7 == 3:
                a = p.read(c, nonce)
            elif i % 11 == 5:
                a = p.add(c, 1 + rng.randrange(5), nonce)
            else:
                a = p.increment(c, nonce)
            e = a.evidence
            out.append((a.value, e.old, e.new, e.siblings, e.root, e.signature))
            if e.signature:
                out.append(v.check_read(a, c, nonce) if i % 7 == 3 else v.check_increment(a, c, nonce, delta=None))
        except (TpmError, VerificationError) as err:
            out.append(repr(err))
        if i % 97 == 50:  # a hostile host: a sibling on the path it sends poked (refused), then put back
            saved, victim = p.tree.snapshot(), rng.randrange(1 << depth)
            p.tree.poke(((1 << depth) + victim) >> rng.randrange(depth) ^ 1, rng.randbytes(20))
            try:
                p.increment(victim, rng.randbytes(20))
            except TpmError as err:
                out.append(repr(err))
            p.tree.restore(saved)
            assert p.tree.root == p.dev.tpm.engine.state.hashtree_root
    saved = p.tree.snapshot()  # a rollback: the host's tree as it was, the TPM's root moved on
    p.increment(1, b"r" * 20)
    p.tree.restore(saved)
    for c in (1, 2):
        try:
            p.increment(c, b"s" * 20)
        except TpmError as err:
            out.append(repr(err))
    store = p.tree._store
    for twin in (copy.deepcopy(store), pickle.loads(pickle.dumps(store))):
        out.append((twin.root, twin.dense, twin.stored(), twin.packed_siblings(3)))
    clock = built.clock
    out.append((clock.now_ms, sorted(clock.by_command_component.items()), p.tree.root, p.tree.stored_nodes(),
                bytes(p.tree.nodes) if isinstance(p.tree.nodes, bytearray) else sorted(p.tree.nodes.items())))
    built.close()
tree = merkle.SparseMerkleTree.from_leaves(9, [hashlib.sha1(i.to_bytes(2, "big")).digest() for i in range(300)])
out.append((tree.root, tree.path(77), merkle.counter_roots(5, 1, 2, tree.path(5))))
print(is_compiled(merkle), hashlib.sha256(pickle.dumps(out)).hexdigest())
"""


def _run(pure: bool) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    if pure:
        env[compiled.PURE_ENV] = "1"
    done = subprocess.run([sys.executable, "-c", SCENARIO], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    is_compiled, digest = done.stdout.split()
    return is_compiled, digest


def _fresh_build() -> bool:
    """A mypyc build of merkle is beside its source and was built from it as it is now."""
    built = [p for p in SOURCE.parent.glob("merkle.*") if p.name.endswith(tuple(EXTENSION_SUFFIXES))]
    return bool(built) and compiled.build_is_fresh(SOURCE)


@pytest.mark.skipif(not _fresh_build(), reason="merkle is not compiled here (make setup builds it with mypyc)")
def test_compiled_merkle_gives_what_its_source_gives() -> None:
    built, pure = _run(pure=False), _run(pure=True)
    assert built[0] == "True" and pure[0] == "False"
    assert built[1] == pure[1]


def test_a_build_is_used_only_while_its_stamp_names_the_source(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("X = 1\n")
    assert not compiled.build_is_fresh(source)  # no stamp: never built
    compiled.stamp_path(source).write_text(compiled.source_digest(source) + "\n")
    assert compiled.build_is_fresh(source)
    source.write_text("X = 2\n")  # edited after the build
    assert not compiled.build_is_fresh(source)
    compiled.stamp_path(source).write_text("not compiled: mypyc is not installed\n")
    assert not compiled.build_is_fresh(source)


def test_pure_python_when_asked_or_when_nothing_was_built() -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC), **{compiled.PURE_ENV: "1"})
    done = subprocess.run([sys.executable, "-c", "from trustlab.devices.tpm12 import merkle; print(merkle.__file__)"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(SOURCE)
    if not _fresh_build():
        assert not compiled.is_compiled(merkle)
