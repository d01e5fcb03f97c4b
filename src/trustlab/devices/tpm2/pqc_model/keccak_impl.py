"""Which Keccak-f[1600] a chip's code runs: hand-written assembly or portable C, and what that costs.

Why this is its own factor: the Cortex-M4 cycle basis is pqm4's "clean" benchmarks, and pqm4 links its
own assembly permutation (mupq/pqm4 mk/crypto.mk: ``common/keccakf1600.S`` beside mupq's ``fips202.c``;
the clean schemes include ``mupq/common/fips202.h``) even for the portable-C schemes: about 11.1 kcycles
per permutation. Code built outside pqm4 (PQClean standalone, liboqs, pq-crystals ref, mlkem-native
without its backends, wolfCrypt unless configured, vendor firmware) runs a C permutation, which our
Cortex-M4 cycle model puts at 1.7-2.3x that (``data/cores.toml`` ``keccak_asm``). So the model states
one basis and converts every figure to it:

* basis: a class's Keccak work per clock (:mod:`.classes`) is on **portable C Keccak**: 1 = a Cortex-M4
  running a C Keccak-f[1600] built -O3;
* a measurement source says which Keccak it ran (``keccak = "asm" | "c" | "unknown"`` in
  pqc_measurements.toml) and its Keccak per clock is brought to that basis before its class pools it;
* a chip says it with ``--chip keccak_impl=asm|c|unknown`` (default unknown).

The factor here multiplies the Keccak time the calibration gives (pqm4's counts: assembly on a Cortex-M4)
for a class on the C basis: ``c`` = the Cortex-M4's C/asm ratio (the class's C per clock is relative to
the M4's C, which is that much slower than the calibration's asm); ``asm`` = that ratio over the class's
own C/asm ratio (a Cortex-M4 running asm: exactly 1, pqm4's figure); ``unknown`` = centred on ``c`` with
the ``asm`` value as the fast end (see :data:`UNKNOWN_RULE`). A class with no sourced assembly speed-up
(no ``keccak_asm`` in cores.toml) has ratio 1: ``asm`` there is priced as C.
"""

from __future__ import annotations

import functools

from trustlab.devices.tpm2.pqc_model import builds, coredata
from trustlab.errors import TrustlabError, choice

ASM, C, UNKNOWN = "asm", "c", "unknown"
KINDS = (ASM, C, UNKNOWN)
BASIS = "cortex-m4"
"""The class whose C/asm ratio bridges the calibration (pqm4's assembly Keccak) to the C basis."""
UNKNOWN_RULE = ("not stated (the --chip default): centred on portable C, the fast end the class's assembly "
                "(log-uniform between, half the weight on C itself): outside pqm4/pqm3's own harnesses every "
                "library's default build runs a C permutation (PQClean, liboqs, pq-crystals ref, mlkem-native "
                "without backends, wolfCrypt unless its assembly is configured), and a vendor's firmware on a "
                "secure controller is rarely pqm4; an assembly Keccak is the exception a source must state")


@functools.cache
def asm_speedup(core: str) -> builds.Factor:
    """The class's C Keccak time over its assembly Keccak time (cores.toml ``keccak_asm``; 1 when none is
    sourced for the class)."""
    entry = coredata._cores()[coredata.resolve(core)]
    if "keccak_asm" not in entry:
        return builds.Factor("keccak-asm", "no assembly Keccak speed-up sourced for this class", 1.0, 1.0, 1.0,
                             "no published or measured assembly Keccak-f[1600] for this class: asm is priced as C")
    lo, mid, hi = (float(x) for x in entry["keccak_asm"])
    return builds.Factor("keccak-asm", "assembly Keccak-f[1600] speed-up over C", lo, mid, hi,
                         entry["keccak_asm_source"])


def sourced_classes() -> tuple[str, ...]:
    """The classes with a sourced assembly Keccak speed-up (cores.toml ``keccak_asm``): where asm is not C."""
    return tuple(name for name, entry in coredata._cores().items() if "keccak_asm" in entry)


def priced_as(core: str, kind: str) -> str:
    """The Keccak a chip's ``kind`` is priced as on ``core``: asm on a class without a sourced speed-up is C."""
    return C if kind == ASM and asm_speedup(core).hi <= 1.0 else kind


def as_c_note(core: str, kind: str) -> str | None:
    """Why a chip's asm is priced as C (None when it is not): said in its provenance, --json and text output,
    because otherwise keccak_impl=asm would silently equal keccak_impl=c."""
    if priced_as(core, kind) == kind:
        return None
    cls = coredata.resolve(core)
    on = cls if core == cls else f"{core} (class {cls})"
    return (f"keccak_impl = asm is priced as portable C on {on}: cores.toml has no sourced "
            f"assembly Keccak-f[1600] speed-up (keccak_asm) for that class, only for {', '.join(sourced_classes())}")


def compiled(core: str, kind: str) -> bool:
    """Whether the compiler's optimisation level moves this Keccak (the build factor's Keccak part applies): not
    for assembly on a class with a sourced assembly speed-up (flags do not rewrite assembly, as builds.toml
    'assembly'); a class without one prices asm as C, build included."""
    return not (kind == ASM and asm_speedup(core).hi > 1.0)


def check(kind: str, where: str) -> str:
    return choice(kind, KINDS, "keccak_impl", where)


def of_source(source: dict) -> str:
    """The Keccak a measurement source ran (its ``keccak`` field; every source must state one)."""
    kind = source.get("keccak")
    if kind is None:
        raise TrustlabError(f"measurement source {source.get('id')!r}: keccak is missing (asm, c or unknown)")
    return check(kind, f"measurement source {source.get('id')!r}")


def time_factor(core: str, kind: str, u=0.5):
    """What the calibration's (assembly, Cortex-M4) Keccak time is multiplied by on class ``core`` for code
    running Keccak ``kind``, at quantile ``u`` (a number or an array; higher = slower)."""
    m4, own = asm_speedup(BASIS), asm_speedup(core)
    c = m4.draw(u)
    if kind == C:
        return c
    if kind == ASM:
        return c / own.draw(u)  # one quantile for both: the same code's ratio on kin ISAs moves together
    fast = m4.mid / own.mid
    return builds.piecewise(fast, m4.mid, m4.hi, u) if fast < m4.mid else c


def centre(core: str, kind: str) -> float:
    """:func:`time_factor` at its centre: what a source's Keccak per clock is multiplied by to stand on the
    C basis (a row that ran C on a Cortex-M4 took A times the calibration's Keccak cycles: x A brings it to 1)."""
    return float(time_factor(core, kind, 0.5))


def text(core: str, kind: str) -> str:
    """Provenance: the Keccak the chip runs and the factor it puts on the calibration's Keccak time."""
    own = asm_speedup(core)
    lo, hi = float(time_factor(core, kind, 0.05)), float(time_factor(core, kind, 0.95))
    m4 = asm_speedup(BASIS)
    what = {ASM: "assembly", C: "portable C", UNKNOWN: UNKNOWN_RULE}[kind]
    return (f"Keccak-f[1600]: {what}: x{lo:.3g}-x{hi:.3g} (5-95%, centre x{centre(core, kind):.3g}) on the calibration's "
            f"Keccak time (pqm4's assembly on a Cortex-M4); Cortex-M4 C/asm x{m4.lo:g}-x{m4.hi:g} ({m4.source})"
            + ("" if coredata.resolve(core) == BASIS else f"; {coredata.resolve(core)} C/asm x{own.lo:g}-x{own.hi:g} "
               f"({own.source})"))

