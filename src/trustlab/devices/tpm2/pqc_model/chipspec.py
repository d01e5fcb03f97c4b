"""A chip described by its facts: core class, clock, optional measured hash rate, bus, certification.

Two ways in: ``ChipSpec.parse("core=cortex-m0plus,mhz=133")`` (the ``--chip`` option) or a TOML
file with the same keys, and :func:`for_profile` for a shipped TPM 2.0 profile (its chips.toml
entry and its own measured rates). Keys::

    core         a core class or alias (cortex-m0plus, m3, sc300, m4, m33, a-class, rv32, rv64, xtensa / esp32, x86,
                 secure-mcu),
                 or a named core of a class (cortex-a53, a72, neoverse-n1, cortex-a78, apple-m1: data/microarch.toml)
    mhz          clock in MHz: 133, or a range 25-100 (unknown clocks are ranges)
    sha256_kbps  optional: the chip's own measured SHA-256 rate in KB/s (1 KB = 1024 bytes, as
                 wolfCrypt / wolfTPM benchmarks print it); it then places the chip's speed
    bus          none (default), spi:MHz, i2c:MHz or memory
    certified    yes/no (default no; yes for a security controller's core: sc000, sc300, secure-mcu):
                 secret-key operations protected (masking factors)
    tpm          yes/no (default no; yes for a security controller's core): key creation = keygen +
                 pairwise consistency test + wrapping,
                 and each command pays ohc_ms
    ohc_ms       per-command overhead in ms (default 0)
    build        how the code is built: speed (-O3), o2 (-O2), size (-Os), debug (-O0), og (-Og), application,
                 or unknown (default; the widest range): data/builds.toml (Embench-IoT's comparisons; -O0
                 and -Og per counted unit, measured on the Kyber reference)
    impl         the code: portable (C), optimized (hand-written assembly), mixed, or unknown (default:
                 portable C at the centre, the class's assembly as the fast end, on cores with a sourced assembly
                 speed-up; portable elsewhere); optimized / mixed only on cores with one: pqm4's Cortex-M4 assembly
                 (M4, M7, M33) or the class's paired C / assembly measurements (data/asm_pairs.toml: m3 / sc300)
                 (:func:`priced_implementation`, which ``validate`` prices its sources by too)
    lineage      the code base of the portable C: reference (pq-crystals ref, PQClean clean, liboqs ref and code
                 derived from them: the classes' basis), mlkem-native (its C without backends: measured faster on
                 the same core, per counted unit; ML-KEM), wolfcrypt (wolfCrypt's own C: measured the same way, for
                 ML-KEM and ML-DSA), mldsa-native (not measured: priced as unknown), or unknown (default: the
                 reference as centre, the fastest measured lineage of the family as the fast end):
                 data/lineage.toml (:mod:`.lineage`); not applied to impl=optimized (hand-written assembly). In a
                 TOML file also a table by family, lineage = {ML-KEM = "reference", ML-DSA = "wolfcrypt"}
    keccak_impl  the software Keccak-f[1600]: asm (hand-written assembly: pqm4's, pqm3's; a speed-up is sourced only
                 for the classes with cores.toml keccak_asm, elsewhere asm is priced as C and the chip says so), c (a portable C
                 permutation: PQClean, liboqs, pq-crystals ref, mlkem-native without backends, wolfCrypt's default),
                 or unknown (default: centred on C, the class's assembly as the fast end; impl=optimized: asm):
                 the classes' Keccak is on the C basis, the Cortex-M4 calibration is pqm4's assembly
                 (:mod:`.keccak_impl`, cores.toml keccak_asm). Not with keccak_engine / keccak_cycles
    keccak_engine  none (default: SHAKE / SHA-3 in software on the core) or a named hardware Keccak engine
                 of data/chips.toml (kmac: OpenTitan's masked KMAC, as on zeroRISC Pavona; kmac-unmasked):
                 the counted Keccak permutations then cost the engine's sourced cycles per permutation
                 (interface included) at the core clock, the rest stays on the core (:mod:`.keccak_engine`)
    keccak_cycles  instead of a named engine: core cycles per Keccak-f[1600] permutation on your engine,
                 the CPU's data movement through its interface included: N or a range LO-HI
    keccak_call_cycles  optional with an engine: core cycles per sponge call (set-up, process, done);
                 N or LO-HI, 0 or more in every form (0: no per-call cost; a named engine has its own;
                 keccak_cycles alone: 0)
    name         a label for the output (at most NAME_MAX_CHARS printable characters); it never changes a
                 prediction (the draws' seed is not the chip's: :func:`.predict.price`)

Keys are case-insensitive in both forms (MHz=100, ``Core = "m4"``). A TOML file has its keys either at the top
level or in one ``[chip]`` table, not both.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from trustlab.devices.tpm2.pqc_model import asm_speedup, builds, chips, classes, keccak_engine, keccak_impl, lineage, \
    silicon, wolftpm_hash_bench
from trustlab.devices.tpm2.pqc_model.params import family
from trustlab.errors import TrustlabError, choice, excerpt

KEYS = ("core", "mhz", "sha256_kbps", "bus", "certified", "tpm", "ohc_ms", "build", "impl", "lineage", "keccak_impl",
        "keccak_engine", "keccak_cycles", "keccak_call_cycles", "name")
IMPLEMENTATIONS = ("portable", "optimized", "mixed", "unknown")
BUSES = ("none", "spi", "i2c", "memory")
SECURE_CORES = ("sc000", "sc300", "secure-mcu", "secure", "smartcard", "se")
"""Core names that denote a security controller: such chips are certified TPMs / secure elements, so a
--chip naming one is priced like a TPM profile (protection and key wrapping on) unless it says otherwise."""
BUS_EFFICIENCY = {"spi": (1.0, 4.0), "i2c": (1.0, 5.0), "memory": (0.0, 0.0), "none": (0.0, 0.0)}
"""Framing/polling factor over the raw bus clock: the chips.toml bus entries' ranges (same sources)."""
BUS_BOUND = 0.25
"""A measured SHA-256 rate whose median bus share exceeds this is bus-bound: it does not place the core."""
NAME_MAX_CHARS = 64
"""A chip label's length: it is a table cell and a plot legend, not a description."""
NAME_REFUSED = ("Cc", "Cf", "Cs", "Zl", "Zp")
"""Unicode categories a label may not hold: control and format characters (an ANSI escape recolours the
terminal, a newline splits a table row, a bidi override reorders the line) and line/paragraph separators."""


@dataclass(frozen=True)
class ChipSpec:
    name: str
    core: str | None                      # core class (pqc_model.classes), None: per_clock below
    mhz: tuple[float, float]              # clock range; lo == hi when known
    clock_source: str = "given"
    per_clock: tuple[float, float] | None = None  # only for chips.toml classes without a core class
    sha256_bytes_per_ms: float | None = None      # the chip's own SHA-256 compression rate (bus time removed)
    sha256_source: str = ""
    ecdsa_sign_ms: float | None = None    # software-crypto chips: measured ECDSA P-256 sign
    bus: str = "none"
    bus_hz: float = 0.0
    bus_efficiency: tuple[float, float] = (0.0, 0.0)
    certified: bool = False
    tpm: bool = False
    ohc_ms: float = 0.0
    calibrated_profile: str | None = None  # a profile with published PQC figures (pqc_model.silicon)
    build: str = builds.UNKNOWN           # how the chip's code is built (pqc_model.builds; unknown: widest)
    implementation: str = "unknown"       # portable C, hand-written assembly, mixed, or not stated
    timer: builds.Factor | None = None    # validation only: what a reported figure counts per core cycle
    keccak_engine: keccak_engine.KeccakEngine | None = None  # Keccak on a hardware engine (None: on the core)
    keccak_impl: str = keccak_impl.UNKNOWN  # the software Keccak-f[1600]: asm, c or unknown (.keccak_impl)
    lineage: lineage.Statement = lineage.UNKNOWN  # the portable C's code base: reference, ..., or one per family
    notes: tuple[str, ...] = field(default_factory=tuple)

    def bus_ms_per_byte(self, u: float = 0.5) -> float:
        if self.bus in ("none", "memory") or self.bus_hz <= 0:
            return 0.0
        bits = 8.0 * 68.0 / 64.0 if self.bus == "spi" else 9.0
        lo, hi = self.bus_efficiency
        return bits / self.bus_hz * 1000.0 * math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * u)

    @classmethod
    def parse(cls, text: str) -> "ChipSpec":
        """``--chip``: 'key=value,...' or the path of a TOML file with the same keys."""
        text = text.strip()
        if not text:
            raise TrustlabError("--chip: empty (give core=CLASS,mhz=N or a FILE.toml)")
        if "=" not in text or _toml_file(text):  # ('a=b.toml' is a file name when that file exists)
            from trustlab.limits import parse_toml, read_text, shown

            path = Path(text)
            try:  # a name too long for the system (5,000 digits) was an OSError traceback here
                exists = path.exists() or path.is_symlink()
            except (OSError, ValueError):
                exists = False
            if not exists:
                raise TrustlabError(f"--chip: {shown(text)!r} is neither key=value pairs nor an existing TOML file")
            # bounded, a regular file only (a FIFO would hang, /dev/zero fill the memory)
            where = f"--chip {shown(text)}"
            doc = _lower_keys(parse_toml(read_text(path, "chip TOML"), where), where)
            if "chip" in doc:
                chip = doc["chip"]
                if not isinstance(chip, dict):  # 'chip = 5' was a TypeError traceback, 'chip = "m4"' read per letter
                    raise TrustlabError(f"{where}: chip = {excerpt(chip)} must be a table ([chip] with core, mhz, ...)")
                mixed = [k for k in doc if k != "chip"]
                if mixed:  # the top-level keys were ignored, then 'mhz is required' for the one given above
                    raise TrustlabError(f"{where}: top-level key {excerpt(mixed[0])} beside a [chip] table: put every "
                                        "key in [chip] or every key at the top level, not both")
                doc = _lower_keys(chip, where)
            return _from_mapping(doc, where=where)
        pairs: dict[str, str] = {}
        for item in text.split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise TrustlabError(f"--chip: {excerpt(item.strip())} is not key=value (keys: {', '.join(KEYS)})")
            k, v = item.split("=", 1)
            k = k.strip().lower()
            if k in pairs:
                raise TrustlabError(f"--chip: {_key(k)} given twice")
            pairs[k] = v.strip()
        return _from_mapping(pairs, where="--chip")


def _lower_keys(doc: dict, where: str) -> dict:
    """A TOML table with its keys lower-cased, as key=value's are (``MHz = 100`` as ``mhz=100``)."""
    out: dict = {}
    for key, value in doc.items():
        k = key.strip().lower()
        if k in out:
            raise TrustlabError(f"{where}: {_key(k)} given twice (keys are case-insensitive)")
        out[k] = value
    return out


def _key(key: str) -> str:
    """A key as an error names it: a known key bare (mhz), anything else quoted short."""
    return key if key in KEYS else excerpt(key)


def _toml_file(text: str) -> bool:
    try:
        return text.endswith(".toml") and Path(text).is_file()
    except (OSError, ValueError):
        return False


def _number(value, key: str, where: str, positive: bool = True) -> float:
    if isinstance(value, bool):  # TOML true/false: float(True) would be a silent 1
        raise TrustlabError(f"{where}: {key} = {str(value).lower()} is not a number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TrustlabError(f"{where}: {key} = {excerpt(value)} is not a number") from None
    except OverflowError:  # a TOML integer beyond a float (mhz = 1 and 400 zeros): as its string form's inf
        x = math.inf
    if not math.isfinite(x) or (x <= 0 if positive else x < 0):
        raise TrustlabError(f"{where}: {key} = {excerpt(value)} must be a {'positive' if positive else 'non-negative'} "
                            "finite number")
    return x


def _flag(value, key: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("yes", "true", "1", "on"):
        return True
    if v in ("no", "false", "0", "off"):
        return False
    raise TrustlabError(f"{where}: {key} = {excerpt(value)} is not yes/no")


MHZ_RANGE = (0.001, 10000.0)
"""Clocks a chip can have (1 kHz .. 10 GHz): outside, a typo (and the times would overflow)."""
OHC_MAX_MS = 1e6
SHA256_KBPS_RANGE = (1e-3, 1e9)
BUS_MHZ_RANGE = (0.001, 10000.0)
"""Bus clocks (1 kHz .. 10 GHz): outside, a typo (a 1e-300 MHz bus printed 300-digit times)."""


def _is_range(value) -> bool:
    """'25-100' is a range; '1e-3' and '-5' are numbers (to be refused or taken as such)."""
    if not isinstance(value, str) or "-" not in value.strip().lstrip("-"):
        return False
    try:
        float(value)
        return False
    except ValueError:
        return True


def _bounded(x: float, key: str, where: str, lo: float, hi: float, unit: str) -> float:
    if not lo <= x <= hi:
        raise TrustlabError(f"{where}: {key} = {x:g} is outside {lo:g}-{hi:g} {unit}")
    return x


def _range(value, key: str, where: str, lo_hi: tuple[float, float], unit: str,
           positive: bool = True) -> tuple[float, float]:
    """A number or a range ('25-100', or a TOML [low, high]) of positive (or non-negative) numbers within
    ``lo_hi``: one rule for all three forms."""
    if isinstance(value, list):
        if len(value) != 2:
            raise TrustlabError(f"{where}: {key} as a list needs [low, high], got {excerpt(value)}")
        lo, hi = (_number(v, key, where, positive) for v in value)
    elif _is_range(value):
        # the separator: a '-' that is neither a leading sign nor an exponent's ('-25-100', '1e-3-100')
        cut = next(i for i in range(1, len(value)) if value[i] == "-" and value[i - 1] not in "eE")
        a, b = value[:cut], value[cut + 1:]
        lo, hi = _number(a, key, where, positive), _number(b, key, where, positive)
    else:
        lo = hi = _number(value, key, where, positive)
    if lo > hi:
        raise TrustlabError(f"{where}: {key} range {lo:g}-{hi:g} has low above high")
    for x in (lo, hi):
        _bounded(x, key, where, *lo_hi, unit)
    return lo, hi


def _mhz(value, where: str) -> tuple[float, float]:
    return _range(value, "mhz", where, MHZ_RANGE, "MHz (beyond any chip)")


def _engine(doc: dict, where: str) -> keccak_engine.KeccakEngine | None:
    """keccak_engine / keccak_cycles / keccak_call_cycles: where the chip's Keccak permutations run."""
    from trustlab.limits import shown

    name = str(doc.get("keccak_engine", keccak_engine.NONE)).strip().lower()
    cycles_unit = "core cycles (a software Keccak-f[1600] takes about 1e4)"
    if "keccak_cycles" in doc:
        if name != keccak_engine.NONE:
            raise TrustlabError(f"{where}: keccak_cycles and keccak_engine = {shown(name)!r} both given: "
                                "name an engine or give its cycles per permutation, not both")
        engine = keccak_engine.given(_range(doc["keccak_cycles"], "keccak_cycles", where, keccak_engine.CYCLES_RANGE,
                                            cycles_unit))
    elif name == keccak_engine.NONE:
        engine = None
    else:
        try:
            engine = keccak_engine.named(name)
        except TrustlabError:
            raise TrustlabError(f"{where}: keccak_engine = {shown(name)!r} is not a known Keccak engine: use one of "
                                f"{', '.join((keccak_engine.NONE,) + keccak_engine.names())}, or keccak_cycles=N (core "
                                "cycles per permutation, interface included)") from None
    if "keccak_call_cycles" in doc:
        if engine is None:
            raise TrustlabError(f"{where}: keccak_call_cycles needs a Keccak engine (keccak_engine=NAME or "
                                "keccak_cycles=N): without one, Keccak runs in software on the core")
        # 0 is a real engine's answer (a driver that only feeds blocks: no set-up per call), in every form: 0, 0-50,
        # [0, 0]; else the permutation's bounds
        call = _range(doc["keccak_call_cycles"], "keccak_call_cycles", where, (0.0, keccak_engine.CYCLES_RANGE[1]),
                      cycles_unit, positive=False)
        engine = keccak_engine.with_calls(engine, call)
    return engine


def _bus(value: str, where: str) -> tuple[str, float]:
    v = str(value).strip().lower()
    kind, _, rate = v.partition(":")
    if kind not in BUSES:
        raise TrustlabError(f"{where}: bus = {excerpt(value)}: use none, memory, spi:MHz or i2c:MHz")
    if kind in ("none", "memory"):
        if rate:
            raise TrustlabError(f"{where}: bus = {excerpt(value)}: {kind} takes no clock")
        return kind, 0.0
    if not rate:
        raise TrustlabError(f"{where}: bus = {excerpt(value)} needs its clock, e.g. {kind}:33 (MHz)")
    mhz = _bounded(_number(rate, "bus clock", where), "bus clock", where, *BUS_MHZ_RANGE, "MHz")
    return kind, mhz * 1e6


def _from_mapping(doc: dict, where: str) -> ChipSpec:
    unknown = [k for k in doc if k not in KEYS]
    if unknown:
        raise TrustlabError(f"{where}: unknown key {excerpt(unknown[0])} (keys: {', '.join(KEYS)})")
    if "core" not in doc:
        raise TrustlabError(f"{where}: core is required (one of {', '.join(classes.names())})")
    try:
        core = classes.canonical(str(doc["core"]))  # a named core (cortex-a72) stays named: its per-clock factor
    except TrustlabError as exc:
        raise TrustlabError(f"{where}: {exc}") from None
    if "mhz" not in doc:  # after the core: a misspelt core is the first thing to tell
        raise TrustlabError(f"{where}: mhz is required (the clock in MHz, or a range like 25-100)")
    mhz = _mhz(doc["mhz"], where)
    secure = str(doc["core"]).strip().lower() in SECURE_CORES
    bus, bus_hz = _bus(doc.get("bus", "none"), where)
    build = choice(doc.get("build", builds.UNKNOWN), builds.kinds(), "build", where)
    impl = choice(doc.get("impl", "unknown"), IMPLEMENTATIONS, "impl", where)
    priced = priced_implementation(core, impl)
    if priced != impl:  # said, not silently re-read: the user may hold a speed-up the model cannot price
        raise TrustlabError(f"{where}: impl = {impl}: no sourced assembly speed-up for a {core} (the model's are "
                            "pqm4's Cortex-M4 DSP code, which it cannot run, and a class's paired C / assembly "
                            f"measurements, data/asm_pairs.toml: cortex-m3 / sc300); use impl={priced} (there: "
                            "portable C at the class's speed; keccak_impl=asm still prices a sourced assembly Keccak)")
    if build == "assembly" and impl == "portable":
        raise TrustlabError(f"{where}: build = assembly (hand-written assembly) contradicts impl = portable")
    engine = _engine(doc, where)
    if "keccak_impl" in doc:
        kimpl = keccak_impl.check(doc["keccak_impl"], where)
        if engine is not None:
            raise TrustlabError(f"{where}: keccak_impl = {kimpl} and a Keccak engine both given: with keccak_engine / "
                                "keccak_cycles the permutations run on the engine, not in software")
    else:  # hand-written assembly (pqm4's m4f code) links pqm4's assembly Keccak
        kimpl = keccak_impl.ASM if impl == "optimized" else keccak_impl.UNKNOWN
    try:
        code_base = lineage.statement(doc["lineage"], where) if "lineage" in doc else lineage.UNKNOWN
    except TrustlabError as exc:
        if isinstance(doc["lineage"], dict):
            raise
        raise TrustlabError(f"{exc}; a code base per family: in a --chip TOML file, lineage = {{ML-KEM = "
                            '"reference", ML-DSA = "wolfcrypt"}') from None
    sha = None
    if "sha256_kbps" in doc:
        kbps = _bounded(_number(doc["sha256_kbps"], "sha256_kbps", where), "sha256_kbps", where, *SHA256_KBPS_RANGE,
                        "KB/s")
        sha = kbps * 1024.0 / 1000.0  # bytes per ms
    # a security controller's core (sc300) is priced as a certified TPM on its class (cortex-m3): the label says so
    typed = str(doc["core"]).strip().lower()
    shown_core = core if not secure else f"{typed} (security controller)" if core in (None, typed) else \
        f"{typed} ({core} class, security controller)"
    name = _name(doc["name"], core, where) if "name" in doc else \
        f"{shown_core} @ {mhz[0]:g}" + (f"-{mhz[1]:g}" if mhz[1] != mhz[0] else "") + " MHz"
    note = None if engine is not None else keccak_impl.as_c_note(core or "secure-mcu", kimpl)
    spec = ChipSpec(name=name,
                    core=core, mhz=mhz, clock_source="given (--chip)",
                    bus=bus, bus_hz=bus_hz, bus_efficiency=BUS_EFFICIENCY[bus],
                    certified=_flag(doc.get("certified", secure), "certified", where),
                    tpm=_flag(doc.get("tpm", secure), "tpm", where),
                    ohc_ms=_bounded(_number(doc.get("ohc_ms", 0.0), "ohc_ms", where, positive=False), "ohc_ms",
                                    where, 0.0, OHC_MAX_MS, "ms"), build=build, implementation=impl,
                    keccak_engine=engine, keccak_impl=kimpl, lineage=code_base,
                    notes=() if note is None else (note,))
    if sha is not None:
        compute = 1.0 / sha - spec.bus_ms_per_byte()
        if compute <= 0:
            raise TrustlabError(f"{where}: sha256_kbps = {excerpt(doc['sha256_kbps'])} is faster than the bus can carry the bytes")
        spec = replace(spec, sha256_bytes_per_ms=1.0 / compute, sha256_source="given (--chip sha256_kbps)")
    return spec


ASSEMBLY_IMPLEMENTATIONS = ("optimized", "mixed")
"""Implementations with hand-written assembly: their speed-up is the class's paired C / assembly measurements
(:mod:`.asm_speedup`) where it has them, else pqm4's Cortex-M4 assembly where the class runs it
(:func:`.estimate.impl_factor`); on other cores they are priced as unknown (:func:`priced_implementation`)."""


def priced_implementation(core: str | None, impl: str, exclude: frozenset[str] = frozenset(),
                          algorithm: str | None = None) -> str:
    """The implementation the model prices for code stated as ``impl`` on ``core``: the one rule for ``--chip``
    (which refuses a statement it would not price as said, naming this answer) and for ``validate`` (which prices
    a published source as that answer, so its leave-one-source-out error is the error ``--chip`` makes; ``exclude``:
    the sources left out, whose paired measurements do not count).

    The model has two kinds of sourced assembly speed-up: pqm4's Cortex-M4 code (ARMv7E-M DSP instructions: pqm4
    m4f / m4fspeed over clean), on the classes that run it (cores.toml ``assembly = true``), and a class's own paired
    portable-C / assembly measurements (:mod:`.asm_speedup`, data/asm_pairs.toml: Cortex-M3 / SC300). A core with
    neither (Cortex-M0+, RISC-V, A-class, x86, secure controllers) has no sourced speed-up for hand-written assembly,
    so 'optimized' / 'mixed' there is priced as 'unknown': portable C at the class's speed
    (:func:`.estimate.impl_factor`). Its assembly Keccak is the Keccak implementation's to say (``keccak_impl=asm``,
    sourced per class in cores.toml ``keccak_asm``), not the implementation's. A chip without a core class (a
    chips.toml entry) keeps ``impl``. With ``algorithm``, per family: a class whose pairs cover one family prices
    the other's assembly as 'unknown' (:func:`for_algorithm`); without, any family will do (a chip's statement)."""
    if impl in ASSEMBLY_IMPLEMENTATIONS and core is not None and not assembly_priced(core, exclude, algorithm):
        return "unknown"
    return impl


def assembly_priced(core: str, exclude: frozenset[str] = frozenset(), algorithm: str | None = None) -> bool:
    """Whether the model has a sourced assembly speed-up for ``core`` (for ``algorithm``'s family, if given): pqm4's
    (cores.toml ``assembly``) or the class's own paired measurements (:mod:`.asm_speedup`)."""
    return classes.runs_pqm4_assembly(core) or asm_speedup.has(core, exclude, algorithm)


def repriced_text(stated: str, priced: str, core: str, algorithm: str | None = None) -> str:
    """The one sentence saying that code stated as ``stated`` is priced as ``priced`` ('' when they agree)."""
    if stated == priced:
        return ""
    on = f" on {family(algorithm)}" if algorithm is not None else ""
    return (f"implementation {stated} priced as {priced}, as --chip prices it on a {core} "
            f"(chipspec.priced_implementation: no sourced assembly speed-up for this core{on})")


def for_algorithm(spec: ChipSpec, algorithm: str, exclude: frozenset[str] = frozenset()) -> ChipSpec:
    """``spec`` as priced for ``algorithm``: a stated assembly implementation that the class has no sourced
    speed-up for on that family (its pairs cover the other) is priced as 'unknown', with a note saying so."""
    priced = priced_implementation(spec.core, spec.implementation, exclude, algorithm)
    if priced == spec.implementation:
        return spec
    return replace(spec, implementation=priced,
                   notes=spec.notes + (repriced_text(spec.implementation, priced, spec.core, algorithm),))


def _name(value, core: str | None, where: str) -> str:
    """The chip's label: printable, one line, short (it is a table cell; a control character would reach the
    terminal, a newline split the row)."""
    import unicodedata

    name = str(value)
    if not name.strip():
        raise TrustlabError(f"{where}: name is empty (leave it out for '{core} @ <mhz> MHz')")
    bad = next((ch for ch in name if unicodedata.category(ch) in NAME_REFUSED), None)
    if bad is not None:
        raise TrustlabError(f"{where}: name {excerpt(name)} holds a control character (U+{ord(bad):04X}): a label "
                            "is printable text on one line")
    if len(name) > NAME_MAX_CHARS:
        raise TrustlabError(f"{where}: name is {len(name)} characters long, at most {NAME_MAX_CHARS} (a label for the "
                            "output)")
    return name


def for_profile(profile) -> ChipSpec:
    """The facts of a TPM 2.0 profile's chip: chips.toml plus the profile's own measured rates."""
    chip = chips.chip_for(profile.name)
    spec = ChipSpec(name=profile.name, core=chip.core, mhz=chip.clock_mhz, clock_source=chip.clock_source,
                    per_clock=None if chip.core else chip.per_clock,
                    bus=chip.bus, bus_hz=chip.bus_hz, bus_efficiency=chip.bus_efficiency,
                    certified=chip.certified, tpm=True,
                    ohc_ms=profile.mean("ohc") if "ohc" in profile else 0.0,
                    calibrated_profile=profile.name if silicon.published(profile.name) else None)
    if chip.software_crypto and "ecc256_sign" in profile and profile.mean("ecc256_sign") > 0:
        return replace(spec, ecdsa_sign_ms=profile.mean("ecc256_sign"))
    if "sha256_byte" in profile and profile.mean("sha256_byte") > 0:
        bus = statistics.median([spec.bus_ms_per_byte((i + 0.5) / 32) for i in range(32)])
        compute = profile.mean("sha256_byte") - bus
        if bus > BUS_BOUND * profile.mean("sha256_byte"):
            return replace(spec, notes=(f"SHA-256 rate not used: the bus takes {bus / profile.mean('sha256_byte'):.0%} "
                                        "of the measured time per byte, so it says little about the core",))
        if _from_wolftpm_bench(profile):
            rate = wolftpm_hash_bench.compression_bytes_per_ms(profile.mean("sha256_byte"), bus)
            if rate is not None:
                return replace(spec, sha256_bytes_per_ms=rate, sha256_source=(
                    f"{profile.name} sha256_byte = {profile.mean('sha256_byte'):g} ms per counted byte: x"
                    f"{wolftpm_hash_bench.COUNTED_BYTES} less the median bus time of "
                    f"{wolftpm_hash_bench.EXTRA_WIRE_BYTES} bytes, over {wolftpm_hash_bench.COMPRESSED_BYTES} "
                    f"compressed bytes ({wolftpm_hash_bench.SOURCE})"))
        elif compute > 0:
            return replace(spec, sha256_bytes_per_ms=1.0 / compute,
                           sha256_source=f"{profile.name} sha256_byte = {profile.mean('sha256_byte'):g} ms/B "
                           "less the median bus time per byte")
    return spec


def _from_wolftpm_bench(profile) -> bool:
    """True when the profile's SHA-256 rate is wolfTPM's bench figure (its command sequence is known)."""
    from trustlab.data import wolftpm

    prov = profile.components["sha256_byte"].provenance
    return prov is not None and prov.source == wolftpm.SOURCE
