"""``trustlab run pqc-tpm``: ML-DSA and ML-KEM on today's TPM chips (TCG Library 1.85 what-if).

For every TPM 2.0 profile and ML-DSA-44/65/87, ML-KEM-768/1024: key generation
(TPM2_Create + TPM2_Load; the TPM keeps the seed, so Load expands it again),
sign (TPM2_SignDigest) or encapsulate, verify (TPM2_VerifyDigestSignature) or
decapsulate, and for ML-DSA one whole attestation (create the AK, sign the PCR
digest, verify). Each figure is the median and 95th percentile of ``--draws``
Monte-Carlo draws of the PQC cost model (:mod:`trustlab.devices.tpm2.pqc_model`:
a counted run of the FIPS 203/204 operation, a speed quantile of the chip, a
bus factor), with the share spent on the bus and the bytes moved. Beside each,
the classical equivalent on the same profile from its measured components
(ECDSA P-256 / ECDH, RSA-2048) through the tpm2 cost formulas. A row's
``commands`` are what its median_ms / low_ms / high_ms cover - on a calibrated
profile (SEALSQ) the publishing benchmark's commands, e.g. sign =
SignSequenceStart + SignSequenceComplete - and ``served_commands`` what its
served draws (served_median_ms, p95_ms) cover.

Also: whether each command frame fits the chip's TPM_PT_MAX_COMMAND_SIZE, the
peak RAM of each operation (pqm4) and the validation rows of the model.

In ``--json`` (and the saved record) provenance is said once: ``provenance`` is a table of texts keyed
``p1``, ``p2``, ...; a row's ``provenance``, a chip's ``unit_costs`` and a validation row's ``source`` and
``note`` hold keys, and ``"; ".join(table[k] for k in keys)`` is the full string
(:mod:`trustlab.shared_provenance`; ``expand`` restores every string; the report shows them in full).
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass
from typing import Any

from trustlab.devices.tpm2.pqc_model import asm_speedup, builds, chips, chipspec, classes, frames, keccak_engine, \
    keccak_impl, lineage, predict, ram, silicon, validation
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.devices.tpm2.pqc_model.cost import SHAKE256_RATE, absorb_ms, operation_cost, unit_costs
from trustlab.devices.tpm2.pqc_model.params import ALGORITHMS, DSA_OPERATIONS, KEM_OPERATIONS, MLKEM, params
from trustlab.errors import TrustlabError
from trustlab.experiments._params import load_profile, name_list, seed
from trustlab.shared_provenance import TABLE as SHARED, Table
from trustlab.experiments.registry import Result, experiment
from trustlab.timing import registry
from trustlab.timing.clock import Clock
from trustlab.timing.formula_sets import tpm2 as rules
from trustlab.timing.profile import Profile
from trustlab.textable import table

FOCUS_DEFAULT = "st-st33ktpm2xspi-wolftpm"
# Classical twins: (command, variant) frames per operation; sizes from swtpm's recorded frames
# (rules.SIZES) or, for ECDH (not in the measurement suite), from the parameter lists.
ECDH_SIZES = {"TPM2_ECDH_KeyGen": (14, 154), "TPM2_ECDH_ZGen": (97, 89)}
AUTH = 13  # authorizationSize + one password session
CLASSICAL_SIG = {"ECDSA P-256": "ecc256", "RSA-2048": "rsa2048"}
CLASSICAL_KEM = {"ECDH P-256": "ecc256", "RSA-2048": "rsa2048"}
SIG_COMMANDS = {"keygen": ("TPM2_Create",), "load": ("TPM2_Load",), "sign": ("TPM2_Sign",),
                "verify": ("TPM2_VerifySignature",)}
KEM_COMMANDS = {"ecc256": {"keygen": ("TPM2_Create",), "load": ("TPM2_Load",), "encapsulate": ("TPM2_ECDH_KeyGen",),
                           "decapsulate": ("TPM2_ECDH_ZGen",)},
                "rsa2048": {"keygen": ("TPM2_Create",), "load": ("TPM2_Load",), "encapsulate": ("TPM2_RSA_Encrypt",),
                            "decapsulate": ("TPM2_RSA_Decrypt",)}}


MIN_DRAWS, MAX_DRAWS = 10, 20000
"""The bound on --draws: 20000 draws pin the median and p95 far finer than the model's own spread (chip
speed quantile, bus factor). Run time grows linearly with --draws: 1000 draws over every tpm2 profile took
7.6 s here, so the old bound of 100000 meant a quarter of an hour or more (about an hour on a loaded machine)."""
PROGRESS_MIN_DRAWS = 100_000
"""Draws in the whole run (profiles x algorithms x --draws) from which a progress bar is worth showing."""

MAX_COMPONENT_MS = 1e9  # ~11.6 days per unit: far beyond any chip, small enough that every sum stays finite


def _stats(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


TPM_KEM_OPERATIONS = ("keygen", "load") + KEM_OPERATIONS[1:]
TPM_DSA_OPERATIONS = ("keygen", "load") + DSA_OPERATIONS[1:]
"""A TPM's rows: key creation (TPM2_Create), loading the key (TPM2_Load), then using it."""


def _pqc_frames(algorithm: str, operation: str) -> list[tuple[str, frames.Frame]]:
    """The command of one row: keygen = TPM2_Create (keygen + consistency test + wrapping), load =
    TPM2_Load (the seed expanded again), then SignDigest / VerifyDigestSignature / Encapsulate / Decapsulate."""
    if operation in ("keygen", "load"):
        create, load = frames.keygen_frames(algorithm)
        return [("create", create)] if operation == "keygen" else [("load", load)]
    return [(operation, frames.use_frames(algorithm, operation))]


def pqc_draws(profile, algorithm: str, operation: str, draws: int, rng: random.Random,
              protection: bool = True) -> dict:
    """Totals, bus ms and frames of ``draws`` served draws of one operation (all its commands)."""
    plan = _pqc_frames(algorithm, operation)
    totals, bus = [], []
    for _ in range(draws):
        t = b = 0.0
        for op, f in plan:
            cost = operation_cost(profile, algorithm, op, in_bytes=f.in_bytes, out_bytes=f.out_bytes, rng=rng,
                                  protection=protection)
            t += sum(cost.values())
            b += cost["pqc_bus"]
        totals.append(t)
        bus.append(b)
    return {"totals": totals, "bus": bus, "frames": [f for _, f in plan]}


def _engine_kind(spec: ChipSpec) -> str:
    """Where a --chip's Keccak runs: 'software' (on the core), an engine's name, or 'given' (keccak_cycles)."""
    return spec.keccak_engine.kind if spec.keccak_engine is not None else "software"


def _engine_facts(spec: ChipSpec) -> dict | None:
    """A --chip's Keccak engine for --json 'chips': cycles per permutation and per call (low, centre, high)."""
    e = spec.keccak_engine
    if e is None:
        return None
    return {"kind": e.kind, "label": e.label, "cycles_per_permutation": list(e.perm_cycles),
            "cycles_per_call": list(e.call_cycles), "source": e.source}


def priced(chip, algorithm: str, operation: str, protection: bool) -> dict:
    """median_ms / low_ms / high_ms and provenance of one row (predict.price; the keygen row is key
    creation on a TPM, the bare keygen on a chip that is not one)."""
    spec = chip if isinstance(chip, ChipSpec) else chipspec.for_profile(chip)
    parts = ["create"] if operation == "keygen" and spec.tpm else [operation]
    prices = [predict.price(algorithm, op, spec, protection=protection) for op in parts]
    return {"median_ms": sum(p.median_ms for p in prices), "low_ms": sum(p.low_ms for p in prices),
            "high_ms": sum(p.high_ms for p in prices), "run_median_ms": sum(p.run_median_ms for p in prices),
            **basis_fields(max((p.basis for p in prices), key=predict.BASES.index)),
            "provenance": " | ".join(f"{op}: {p.provenance}" for op, p in zip(parts, prices))}


def basis_fields(basis: str) -> dict:
    """A row's ``basis`` (predict.BASES: "calibration", "extrapolated from calibration", "model") and
    ``calibrated``: true only for a row priced at the published figure of that very operation."""
    return {"basis": basis, "calibrated": basis == predict.CALIBRATION}


def basis_mark(row: dict) -> str:
    """What a table appends to a row's operation: " (calibration)", " (extrapolated from calibration)", or ""."""
    basis = row.get("basis", predict.CALIBRATION if row.get("calibrated") else predict.MODEL)
    return "" if basis == predict.MODEL else f" ({basis})"


def priced_commands(profile_name: str, algorithm: str, operation: str, served: list[str], basis: str) -> list[str]:
    """The commands a row's median_ms / low_ms / high_ms cover: the served ones, except for a row priced through a
    published figure (its own or extrapolated), which is the publishing benchmark's whole operation (wolfTPM's bench
    signs with SignSequenceStart + SignSequenceComplete, creates with CreatePrimary + FlushContext: silicon.toml
    ``bench_commands``)."""
    if basis == predict.MODEL:
        return served
    call = "create" if operation == "keygen" else operation
    found = silicon.for_operation(profile_name, algorithm, call)
    if found is None or found[0].call != call or not found[0].commands:
        return served  # (a load takes the factor of a public-key operation, not its commands)
    return list(found[0].commands)


def _quantiles(profile, component: str) -> tuple[float, float, float]:
    """(mean, 5%, 95%) of a unit cost of the chip's pqc profile: its stored quantiles, comonotonic with the
    chip's other compute units (chips.N_QUANTILES), so they add to the sign command's own interval."""
    pqc = unit_costs(profile)
    comp = pqc.components.get(component)
    if comp is None:
        return 0.0, 0.0, 0.0
    xs = sorted(comp.samples) or [comp.mean]
    return comp.mean, xs[int(0.05 * (len(xs) - 1))], xs[int(round(0.95 * (len(xs) - 1)))]


def sequence_interval(profile, sign: dict, seq: dict, message: int) -> dict:
    """median_ms / low_ms / high_ms of the sign-sequence row: the one-command sign's price (``sign``, from
    :func:`priced`) plus what the sequence adds - SignSequenceStart (unless the calibrated sign, the benchmark's
    Start + Complete, holds it already), ``n`` SequenceUpdates' overhead and bus bytes, and the Keccak of absorbing
    the message - at the mean and at the 5%/95% quantiles of the chip's Keccak and bus unit costs."""
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    n = seq["updates"]
    benchmark = sign["basis"] != predict.MODEL  # the published sign's commands: Start + Complete
    bus_bytes = message + n * SEQ_UPDATE_OVERHEAD + (0 if benchmark else 40)
    commands = n + (0 if benchmark else 1)
    keccak, bus = _quantiles(profile, "pqc_keccak_f1600"), _quantiles(profile, "pqc_bus_byte")
    perms = message / SHAKE256_RATE
    extra = [commands * ohc + bus[i] * bus_bytes + keccak[i] * perms for i in range(3)]
    return {"median_ms": sign["median_ms"] + extra[0], "low_ms": sign["low_ms"] + extra[1],
            "high_ms": sign["high_ms"] + extra[2],
            # a published sign with modelled updates added is no longer the published figure itself
            **basis_fields(predict.EXTRAPOLATED if benchmark else predict.MODEL),
            "provenance": f"sign: {sign['provenance']} | + SignSequenceStart (unless in the calibrated sign), {n} x "
                          "TPM2_SequenceUpdate (per-command overhead, bus bytes) and the message's Keccak absorbing "
                          f"({perms:.0f} permutations), 5-95% at the chip's Keccak and bus unit-cost quantiles"}


SEQ_UPDATE_OVERHEAD = 10 + 4 + AUTH + 2 + 10 + 5  # command header, handle, password auth, TPM2B size; response
INPUT_BUFFER = 1024
"""TPM_PT_INPUT_BUFFER (largest TPM2B_MAX_BUFFER) of the SLB 9670 and NPCT75x (0x400 in their published
tpm2_getcap output); the sequence chunk is the smaller of it and what the command size allows."""


def sequence_sign(profile, algorithm: str, message: int, draws: int, rng: random.Random) -> dict:
    """Signing a ``message``-byte message through SignSequenceStart / SequenceUpdate x n / SignSequenceComplete."""
    chip = chips.chip_for(profile.name)
    pqc = unit_costs(profile)
    chunk = min(INPUT_BUFFER, chip.max_command_size - SEQ_UPDATE_OVERHEAD)
    n = -(-message // chunk)
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    bus = pqc.mean("pqc_bus_byte")
    start = ohc + bus * 40
    updates = n * ohc + bus * (message + n * SEQ_UPDATE_OVERHEAD) + absorb_ms(profile, message)["pqc_keccak"]
    f = frames.use_frames(algorithm, "sign")
    totals, buses = [], []
    for _ in range(draws):
        cost = operation_cost(profile, algorithm, "sign", in_bytes=40, out_bytes=f.out_bytes, rng=rng)
        totals.append(start + updates + sum(cost.values()))
        buses.append(bus * (40 + message + n * SEQ_UPDATE_OVERHEAD) + cost["pqc_bus"])
    classical = None
    if all(c in profile for c in ("ohc", "sha256_byte", "ecc256_sign")):  # HashSequence + TPM2_Sign
        classical = (n + 2) * ohc + profile.mean("sha256_byte") * message + ohc + profile.mean("ecc256_sign")
    largest = max(chunk + SEQ_UPDATE_OVERHEAD - 15, f.out_bytes)  # an update command, or the signature response
    return {"totals": totals, "bus": buses, "updates": n, "chunk": chunk, "largest": largest,
            "bytes": 40 + message + n * SEQ_UPDATE_OVERHEAD + 40 + f.out_bytes, "classical": classical}


def _classical_frame(command: str, variant: str) -> tuple[int, int]:
    if command in ECDH_SIZES:
        return ECDH_SIZES[command]
    i, o, _, _ = rules.SIZES[(command, variant)]
    return i, o


def classical_draws(profile, variant: str, commands: tuple[str, ...], draws: int, seed: int) -> list[float] | None:
    """Draws of a classical operation on the profile's own components (None if it lacks one)."""
    plan = []
    for command in commands:
        i, o = _classical_frame(command, variant)
        terms = rules.command_terms(command, variant, i, o)
        if any(c not in profile for c in terms if terms[c]):
            return None
        plan.append(terms)
    clock = Clock(profile, seed=seed)
    return [sum(clock.charge(c, n) for terms in plan for c, n in terms.items()) for _ in range(draws)]


def _progress(steps: int, draws: int, off: bool) -> Any:
    """A bar over the (profile, algorithm) pairs on stderr, for long runs in a terminal only (:mod:`trustlab.progress`)."""
    from trustlab import progress

    return progress.bar(steps, "pqc-tpm", "alg", long=steps * draws >= PROGRESS_MIN_DRAWS, off=off)


def _short(name: str) -> str:
    return name.replace("-jcalgtest", "").replace("-wolftpm", "")


def _share_provenance(data: dict) -> None:
    """Each distinct piece of provenance once, in ``data["provenance"]``; rows, chips' unit costs and validation
    rows' sources and notes name theirs by key (:mod:`trustlab.shared_provenance`: ``"; ".join`` of the keys' texts is the
    string). Said per row, the same benchmark and core-factor texts made --json 4.7 MB."""
    shared = Table()
    for row in data["rows"]:
        row["provenance"] = shared.refs(row["provenance"])
    for fact in data["chips"]:
        if "unit_costs" in fact:
            fact["unit_costs"] = {name: shared.refs(text) for name, text in fact["unit_costs"].items()}
    data["validation"] = [{k: shared.refs(v) if k in ("source", "note") and isinstance(v, str) else v
                           for k, v in check.items()} for check in data["validation"]]  # copies: rows may be cached
    data[SHARED] = shared.as_dict()


@dataclass(frozen=True)
class Selection:
    """What a pqc-tpm run prices, read from its arguments: the chips given by --chip, the profiles, the
    algorithms, the sign-sequence message size, whether secret-key operations are protected, the focus."""

    specs: list[ChipSpec]
    profiles: list[Profile]
    algorithms: list[str]
    message_bytes: int
    protection: bool
    focus: str | None


def select(args: argparse.Namespace) -> Selection:
    """Resolve and check the arguments without changing them: the experiment's ``check`` (so a sweep's dry
    run refuses what the run refuses) and the start of its ``run`` are this one function, so they cannot
    disagree."""
    if not MIN_DRAWS <= args.draws <= MAX_DRAWS:
        raise TrustlabError(f"--draws must be between {MIN_DRAWS} and {MAX_DRAWS}, got {args.draws} "
                            "(more draws do not sharpen the median or p95 further, they only take longer)")
    specs = [ChipSpec.parse(text) for text in getattr(args, "chip", [])]
    labels = [spec.name for spec in specs]
    for label in dict.fromkeys(x for x in labels if labels.count(x) > 1):  # rows could not be told apart
        raise TrustlabError(f"--chip: {labels.count(label)} chips are labelled {label!r}; give each its own "
                            "name=LABEL (or drop the repeated one)")
    profiles_arg = args.profiles if args.profiles is not None else ("" if specs else "all")
    known = registry.names("tpm2")
    names = known if profiles_arg == "all" else name_list(profiles_arg, "--profiles") if profiles_arg else []
    if not names and not specs:
        raise TrustlabError("--profiles: no profile named")
    profiles = [load_profile("--profiles", n) for n in names]
    for p in profiles:
        if p.family != "tpm2":
            raise TrustlabError(f"--profiles: {p.name!r} is a {p.family!r} profile, not tpm2")
        for cname, comp in p.components.items():
            if comp.mean > MAX_COMPONENT_MS:  # sums of such draws overflow a float
                raise TrustlabError(f"--profiles: {p.name!r}: component {cname} = {comp.mean:g} ms is beyond any "
                                    f"chip (at most {MAX_COMPONENT_MS:g} ms)")
    default_algs = ALGORITHMS if profiles else tuple(dict.fromkeys(("ML-KEM-512",) + ALGORITHMS))
    algorithms = name_list(args.algorithms, "--algorithms") if args.algorithms is not None else list(default_algs)
    allowed = tuple(dict.fromkeys(ALGORITHMS + tuple(MLKEM)))
    for a in algorithms:
        if a not in allowed:
            raise TrustlabError(f"--algorithms: {a!r} is not one of {', '.join(allowed)}")
    if args.message_bytes is not None and not any(a.startswith("ML-DSA") for a in algorithms):
        raise TrustlabError(f"--message-bytes {args.message_bytes}: applies only with an ML-DSA algorithm "
                            "(its sign-sequence row); --algorithms names none")
    message_bytes = 16384 if args.message_bytes is None else args.message_bytes
    if not 1 <= message_bytes <= 1 << 24:
        raise TrustlabError(f"--message-bytes must be between 1 and 16777216, got {message_bytes}")
    protection = getattr(args, "protection", "on") == "on"
    priced_names = [p.name for p in profiles]
    if args.focus is not None and args.focus not in priced_names:
        raise TrustlabError(f"--focus: {args.focus!r} is not among the priced --profiles")
    focus = args.focus or (FOCUS_DEFAULT if FOCUS_DEFAULT in priced_names else (priced_names or [None])[0])
    return Selection(specs, profiles, algorithms, message_bytes, protection, focus)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def describe(chosen: Selection, *, all_profiles: bool) -> str:
    """What this run priced, for its record's description (the report's caption): the experiment's help says what
    a default run does, and a run of --chip alone, of other algorithms or profiles, does something else."""
    where = []
    if chosen.profiles:
        where.append("every TPM 2.0 profile" if all_profiles else
                     f"TPM 2.0 profile{'s' if len(chosen.profiles) > 1 else ''} "
                     f"{_listed([p.name for p in chosen.profiles])}")
    if chosen.specs:
        where.append(f"the chip{'s' if len(chosen.specs) > 1 else ''} given by --chip "
                     f"({_listed([s.name for s in chosen.specs])}), priced from "
                     f"{'their' if len(chosen.specs) > 1 else 'its'} facts alone")
    dsa = [a.startswith("ML-DSA") for a in chosen.algorithms]
    ops = (["keygen", "sign", "verify"] if all(dsa) else ["keygen", "encapsulate", "decapsulate"] if not any(dsa)
           else ["keygen", "sign/encapsulate", "verify/decapsulate"])
    if chosen.profiles and any(dsa):
        ops.append(f"a {chosen.message_bytes}-byte sign sequence and one attestation")
    text = (f"{_listed(chosen.algorithms)} (TPM 2.0 Library 1.85 post-quantum commands) on {' and on '.join(where)}: "
            f"{', '.join(ops)}; median and 5-95% interval")
    if chosen.profiles:
        text += ", p95 of the served draws, bus share and bytes, vs ECDSA P-256 / ECDH / RSA-2048 on the same profile"
    if not chosen.protection:
        text += "; protection of secret-key operations off"
    return text


@experiment("pqc-tpm", help="ML-DSA-44/65/87 and ML-KEM-768/1024 (TPM 2.0 Library 1.85) on every TPM 2.0 profile: "
            "keygen, sign/encapsulate, verify/decapsulate, one attestation; median/p95, bus share, bytes, vs "
            "ECDSA P-256 / RSA-2048")
class PqcTpmExperiment:
    flagship = [["--draws", "100"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profiles", default=None, metavar="NAME[,NAME...]|all",
                            help="TPM 2.0 profiles to price (default: all tpm2 profiles, or none when --chip is given)")
        parser.add_argument("--chip", action="append", default=[], metavar="SPEC|FILE.toml",
                            help="also price a chip nobody profiled: core=CLASS|CORE,mhz=N[,sha256_kbps=K][,bus=spi:MHZ|"
                            "i2c:MHZ][,certified=yes][,tpm=yes][,ohc_ms=X]"
                            f"[,build={'|'.join(builds.kinds())}]"
                            "[,impl=portable|optimized|mixed|unknown]"
                            f"[,lineage={'|'.join(lineage.kinds())}][,keccak_impl=asm|c|unknown][,keccak_engine=none|"
                            f"{'|'.join(keccak_engine.names())}|keccak_cycles=N|LO-HI[,keccak_call_cycles=N]]"
                            "[,name=LABEL] or a TOML file with those "
                            f"keys (core classes: {', '.join(classes.names())}; named cores, priced with their published "
                            f"per-clock factor: {', '.join(classes.microarch_names())}; mhz may be a range 25-100; build "
                            "defaults to unknown, the widest range; impl to unknown (portable C at the centre, the "
                            "class's sourced assembly as the fast end: pqm4's Cortex-M4 assembly on the cores that run "
                            f"it ({', '.join(c for c in classes.names() if classes.runs_pqm4_assembly(c))}), the "
                            "paired C / assembly measurements of data/asm_pairs.toml on "
                            f"{', '.join(sorted({p['class'] for p in asm_speedup.pairs()}))}; optimized/mixed only on "
                            "those cores); lineage: the portable C's code base, reference (pq-crystals "
                            "ref, PQClean clean, liboqs ref: the classes' basis), mlkem-native (its C without backends, ML-KEM) "
                            "or wolfcrypt (wolfCrypt's own C, ML-KEM and ML-DSA), each measured faster per counted unit on a "
                            "Cortex-M4 cycle model and an x86 core; mldsa-native is not measured and priced as unknown, the "
                            "default: the reference as centre, the fastest measured lineage as the fast end "
                            "(data/lineage.toml); one per family in a TOML file: lineage = {ML-KEM = \"reference\", "
                            "ML-DSA = \"wolfcrypt\"}; keccak_impl: the software Keccak-f[1600], asm "
                            "(hand-written assembly, pqm3's / pqm4's: a speed-up over C is sourced only for "
                            f"{', '.join(keccak_impl.sourced_classes())}; on other classes asm is "
                            "priced as C and the output says so) or c (PQClean, liboqs, wolfCrypt, pq-crystals ref), default unknown "
                            "= centred on C with the assembly as the fast end (asm with impl=optimized); sc000/sc300/secure-mcu default to certified=yes,"
                            "tpm=yes; keccak_engine: SHAKE/SHA-3 on a hardware Keccak engine (kmac = OpenTitan's "
                            "masked KMAC, as on zeroRISC Pavona; chips.toml), or keccak_cycles = your engine's core "
                            "cycles per Keccak-f[1600] permutation, interface included: the Keccak permutations are "
                            "priced at that rate, the rest on the core); repeatable")
        parser.add_argument("--algorithms", default=None, metavar="ALG[,ALG...]",
                            help=f"post-quantum algorithms (default: {','.join(ALGORITHMS)}, the ones TPM 2.0 Library "
                            "1.85 profiles; ML-KEM-512 too when only --chip is priced)")
        parser.add_argument("--draws", type=int, default=400,
                            help="served draws per operation: counted run x chip speed quantile x bus factor "
                            f"(default 400, {MIN_DRAWS} to {MAX_DRAWS}; p95, bus share and the attestation come "
                            "from them; median_ms / low_ms / high_ms are the model's central estimate of the mean time "
                            "and 5-95%% interval over its assumption ranges and counted runs; run_median_ms the median "
                            "single run)")
        parser.add_argument("--focus", default=None, metavar="NAME",
                            help=f"profile whose full table is printed, one of --profiles (default {FOCUS_DEFAULT} "
                            "if priced, else the first; every profile's rows are in --json either way)")
        parser.add_argument("--message-bytes", type=int, default=None, metavar="N",
                            help="message size for the 'sign-sequence' row: pure ML-DSA over a message too large "
                            "for one command goes through SignSequenceStart / SequenceUpdate / SignSequenceComplete "
                            "(default 16384)")
        parser.add_argument("--protection", choices=("on", "off"), default="on",
                            help="certified chips protect secret-key operations (ML-KEM decapsulation, ML-DSA "
                            "signing and key generation) against side channels: their compute time carries a factor "
                            "from the one certified 1.85 chip measured (SEALSQ QVault) to full first-order masking "
                            "(ML-KEM decapsulation 1.65-3.5x, ML-DSA signing 1-4.1x, keygen 1-2.8x; chips.toml). "
                            "Default on; off = unprotected code")
        parser.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0)")
        parser.add_argument("--no-progress", action="store_true",
                            help="no progress bar (otherwise one is shown on stderr, if it is a terminal, for "
                            f"runs of {PROGRESS_MIN_DRAWS} draws or more; stdout stays the table or --json)")

    def check(self, args: argparse.Namespace) -> None:
        """Every parameter's check (the registry runs this before a run and on every sweep point)."""
        select(args)

    def run(self, args: argparse.Namespace) -> Result:
        chosen = select(args)  # reads args, never writes them (a sweep checks the same Namespace again)
        specs, profiles, algorithms = chosen.specs, chosen.profiles, chosen.algorithms
        protection, focus, message_bytes = chosen.protection, chosen.focus, chosen.message_bytes
        rows, attest = [], []
        # a classical operation's draws depend only on (profile, variant, commands, draws, seed): every algorithm's
        # rows and attestation of a profile read the same ones, so each is drawn once per run
        memo: dict[tuple, list[float] | None] = {}

        def classical_of(p, variant: str, commands: tuple[str, ...], seed: int) -> list[float] | None:
            key = (p.name, variant, commands, seed)
            if key not in memo:
                memo[key] = classical_draws(p, variant, commands, args.draws, seed=seed)
            return memo[key]

        bar = _progress(len(profiles) * len(algorithms), args.draws, getattr(args, "no_progress", False))
        for pi, p in enumerate(profiles):
            chip = chips.chip_for(p.name)
            spec = chipspec.for_profile(p)
            rng = random.Random(f"{args.seed}:{p.name}")
            bar.set_postfix_str(_short(p.name))
            for algorithm in algorithms:
                kem = "KEM" in algorithm
                ops = TPM_KEM_OPERATIONS if kem else TPM_DSA_OPERATIONS
                draws, price_of = {}, {}
                for op in ops:
                    d = pqc_draws(p, algorithm, op, args.draws, rng, protection=protection)
                    draws[op] = d
                    served_median, p95 = _stats(d["totals"])
                    moved = sum(f.in_bytes + f.out_bytes for f in d["frames"])
                    largest = max(max(f.in_bytes, f.out_bytes) for f in d["frames"])
                    price = price_of[(algorithm, op)] = priced(spec, algorithm, op, protection)
                    served = [f.command for f in d["frames"]]
                    row = {"profile": p.name, "chip": chip.label, "algorithm": algorithm, "operation": op,
                           "commands": priced_commands(p.name, algorithm, op, served, price["basis"]),
                           "served_commands": served, **price,
                           "served_median_ms": served_median, "p95_ms": p95,
                           "bus_share": statistics.fmean(d["bus"]) / statistics.fmean(d["totals"]),
                           "bytes_moved": moved, "largest_frame": largest,
                           "max_command_size": chip.max_command_size,
                           "fits_buffer": largest <= chip.max_command_size}
                    classical = CLASSICAL_KEM if kem else CLASSICAL_SIG
                    for label, variant in classical.items():
                        cmds = (KEM_COMMANDS[variant] if kem else SIG_COMMANDS)[op]
                        c = classical_of(p, variant, cmds, seed=args.seed + pi)
                        row[f"{label} median_ms"] = None if c is None else _stats(c)[0]
                    rows.append(row)
                if not kem:
                    seq = sequence_sign(p, algorithm, message_bytes, args.draws, rng)
                    med, p95 = _stats(seq["totals"])
                    seq_commands = (["TPM2_SignSequenceStart"] + ["TPM2_SequenceUpdate"] * seq["updates"]
                                    + ["TPM2_SignSequenceComplete"])
                    rows.append({"profile": p.name, "chip": chip.label, "algorithm": algorithm,
                                 "operation": "sign-sequence", "message_bytes": message_bytes,
                                 "commands": seq_commands, "served_commands": seq_commands,
                                 "sequence_updates": seq["updates"], "chunk_bytes": seq["chunk"],
                                 **sequence_interval(p, price_of[(algorithm, "sign")], seq, message_bytes),
                                 "served_median_ms": med, "p95_ms": p95,
                                 "bus_share": statistics.fmean(seq["bus"]) / statistics.fmean(seq["totals"]),
                                 "bytes_moved": seq["bytes"], "largest_frame": seq["largest"],
                                 "max_command_size": chip.max_command_size,
                                 "fits_buffer": seq["largest"] <= chip.max_command_size,
                                 "ECDSA P-256 median_ms": seq["classical"], "RSA-2048 median_ms": None})
                if not kem:  # one attestation: create AK (Create + Load), SignDigest, VerifyDigestSignature
                    tot = [sum(draws[op]["totals"][i] for op in TPM_DSA_OPERATIONS) for i in range(args.draws)]
                    bus = sum(sum(draws[op]["bus"]) for op in TPM_DSA_OPERATIONS)
                    med, p95 = _stats(tot)
                    entry = {"profile": p.name, "algorithm": algorithm, "median_ms": med, "p95_ms": p95,
                             "bus_share": bus / sum(tot),
                             "bytes_moved": sum(draws[op]["frames"][i].in_bytes + draws[op]["frames"][i].out_bytes
                                                for op in TPM_DSA_OPERATIONS for i in range(len(draws[op]["frames"])))}
                    for label, variant in CLASSICAL_SIG.items():
                        parts = [classical_of(p, variant, SIG_COMMANDS[op], seed=args.seed + pi)
                                 for op in TPM_DSA_OPERATIONS]
                        entry[f"{label} median_ms"] = (None if any(x is None for x in parts) else
                                                       _stats([sum(xs) for xs in zip(*parts)])[0])
                    attest.append(entry)
                bar.update(1)
        bar.close()
        chip_rows = []
        for spec in specs:
            for algorithm in algorithms:
                ops = (TPM_KEM_OPERATIONS if "KEM" in algorithm else TPM_DSA_OPERATIONS) if spec.tpm else \
                    (KEM_OPERATIONS if "KEM" in algorithm else DSA_OPERATIONS)
                for op in ops:
                    chip_rows.append({"profile": None, "chip": spec.name, "core": spec.core, "mhz": list(spec.mhz),
                                      "keccak_engine": _engine_kind(spec),
                                      "algorithm": algorithm, "operation": op,
                                      "what": ("keygen = TPM2_Create (keygen + consistency test + wrapping)"
                                               if op == "keygen" and spec.tpm else op),
                                      **priced(spec, algorithm, op, protection)})
        facts = []
        for p in profiles:
            c = chips.chip_for(p.name)
            facts.append({"profile": p.name, "chip": c.label, "cpu": c.cpu, "cpu_source": c.cpu_source,
                          "core_class": c.core, "certified": c.certified,
                          "clock_mhz": list(c.clock_mhz), "clock_source": c.clock_source,
                          "per_clock_vs_cortex_m4": list(c.per_clock), "per_clock_source": c.per_clock_source,
                          "bus": c.bus, "bus_hz": c.bus_hz, "bus_source": c.bus_source,
                          "max_command_size": c.max_command_size, "max_command_source": c.max_command_source,
                          "unit_costs": {n: comp.provenance.describe() for n, comp in unit_costs(p).components.items()}})
        for spec in specs:  # what a --chip row assumed (its rows' provenance says it in prose)
            facts.append({"profile": None, "chip": spec.name, "core_class": spec.core, "clock_mhz": list(spec.mhz),
                          "clock_source": spec.clock_source, "build": spec.build, "implementation": spec.implementation,
                          "certified": spec.certified, "tpm": spec.tpm, "bus": spec.bus, "bus_hz": spec.bus_hz,
                          "ohc_ms": spec.ohc_ms, "sha256_bytes_per_ms": spec.sha256_bytes_per_ms,
                          "keccak_impl": None if spec.keccak_engine is not None else spec.keccak_impl,
                          "keccak_impl_priced_as": None if spec.keccak_engine is not None else
                          keccak_impl.priced_as(spec.core or "secure-mcu", spec.keccak_impl),
                          "lineage": lineage.shown(spec.lineage),
                          "lineage_priced_as": {fam: lineage.priced_as(lineage.for_family(spec.lineage, fam), fam)
                                                for fam in lineage.FAMILIES},
                          "notes": list(spec.notes),
                          "keccak_engine": _engine_facts(spec)})
        ram_rows = [{"algorithm": a, "operation": op, **ram.peak_ram(a, op)} for a in algorithms
                    for op in (KEM_OPERATIONS if "KEM" in a else DSA_OPERATIONS)]
        checks = validation.rows()
        loso = validation.summary()
        data = {"draws": args.draws, "seed": args.seed, "protection": protection, "rows": rows + chip_rows,
                "attestation": attest, "ram": ram_rows,
                "validation": checks, "validation_summary": loso, "chips": facts,
                "sizes": {a: {k: getattr(params(a), k) for k in ("pk_bytes", "sk_bytes", "sig_bytes", "ct_bytes")
                              if hasattr(params(a), k)} for a in algorithms}}
        chip_notes = [f"{spec.name}: {note}" for spec in specs for note in spec.notes]
        text = self._text(rows, attest, ram_rows, checks, loso, focus, profiles, chip_rows, args.draws, protection,
                          chip_notes)
        plots = self._plots(rows, attest, profiles, algorithms) + [validation_plot(checks)]
        provs = {p.name: p.provenance.describe() for p in profiles}
        _share_provenance(data)
        return Result(experiment="pqc-tpm", params={"profiles": [p.name for p in profiles], "algorithms": algorithms,
                                                    "chips": [s.name for s in specs],
                                                    "draws": args.draws, "seed": args.seed, "focus": focus,
                                                    "message_bytes": message_bytes, "protection": protection},
                      data=data, text=text, references=[], profiles=provs, plots=plots,
                      meta={"description": describe(chosen, all_profiles=args.profiles in (None, "all"))})

    @staticmethod
    def _text(rows, attest, ram_rows, checks, loso, focus, profiles, chip_rows, draws, protection,
              chip_notes=()) -> str:
        out = []
        prot = "" if protection else "; protection of secret-key operations OFF"
        if focus is not None:
            f_rows = [r for r in rows if r["profile"] == focus]
            head = ["algorithm", "operation", "median ms", "low ms", "high ms", "p95 ms (served)", "bus %", "bytes",
                    "largest frame", "fits", "ECDSA/ECDH P-256 ms", "RSA-2048 ms"]
            body = [[r["algorithm"], r["operation"] + basis_mark(r),
                     r["median_ms"], r["low_ms"], r["high_ms"], r["p95_ms"], 100 * r["bus_share"],
                     r["bytes_moved"], r["largest_frame"],
                     "yes" if r["fits_buffer"] else f"no (> {r['max_command_size']})",
                     r.get("ECDSA P-256 median_ms", r.get("ECDH P-256 median_ms")), r.get("RSA-2048 median_ms")]
                    for r in f_rows]
            out += [f"Post-quantum TPM commands on {focus} (median and 5-95% interval over the model's assumption "
                    f"ranges; p95 of {draws} served draws{prot}; keygen = TPM2_Create (keygen + FIPS 140-3 "
                    "consistency test + wrapping), load = TPM2_Load; classical twins from the profile's measured "
                    "components):", table(body, head), ""]
        if profiles:
            per_chip = []
            for p in profiles:
                def get(alg, op, key="median_ms"):
                    r = next((r for r in rows if r["profile"] == p.name and r["algorithm"] == alg
                              and r["operation"] == op), None)
                    return None if r is None else r.get(key)
                a = next((a for a in attest if a["profile"] == p.name and a["algorithm"] == "ML-DSA-65"), None)
                per_chip.append([_short(p.name), get("ML-DSA-65", "sign"), get("ML-DSA-65", "sign", "low_ms"),
                                 get("ML-DSA-65", "sign", "high_ms"), get("ML-DSA-65", "sign", "ECDSA P-256 median_ms"),
                                 None if a is None else a["median_ms"],
                                 get("ML-KEM-768", "decapsulate"), get("ML-KEM-768", "decapsulate", "low_ms"),
                                 get("ML-KEM-768", "decapsulate", "high_ms"),
                                 get("ML-KEM-768", "decapsulate", "ECDH P-256 median_ms")])
            out += ["Per chip (median ms and interval; '-' = not in the selection or no classical component):",
                    table(per_chip, ["profile", "ML-DSA-65 sign", "low", "high", "ECDSA sign", "ML-DSA-65 attest.",
                                     "ML-KEM-768 decaps", "low", "high", "ECDH ZGen"]), ""]
        if chip_rows:
            out += ["Chips given by --chip (median ms, 5-95% interval; Keccak: where SHA-3/SHAKE run, the core's "
                    "software or a hardware engine):",
                    table([[r["chip"], r["keccak_engine"], r["algorithm"], r["what"], r["median_ms"], r["low_ms"],
                            r["high_ms"]] for r in chip_rows],
                          ["chip", "Keccak", "algorithm", "operation", "median ms", "low ms", "high ms"]),
                    *(f"Note: {n}" for n in chip_notes), ""]
        out += ["Peak RAM (pqm4 stack bytes on a Cortex-M4; chip RAM is " + ram.CHIP_RAM_NOTE + "):",
                table([[r["algorithm"], r["operation"], r.get("clean"), r.get("m4fstack")] for r in ram_rows],
                      ["algorithm", "operation", "clean", "m4fstack"]), ""]
        out += validation_text(checks, loso)
        return "\n".join(out)

    @staticmethod
    def _plots(rows, attest, profiles, algorithms) -> list[dict]:
        names = [p.name for p in profiles]
        if not names:  # --chip alone: per-profile bars would have no bars ('could not be drawn' in the report)
            return []
        x = [_short(n) for n in names]

        def series(alg, op, key="median_ms"):
            by = {r["profile"]: r.get(key) for r in rows if r["algorithm"] == alg and r["operation"] == op}
            return [by.get(n) for n in names]

        def priced_series(alg, op, label):
            """The PQC bars: median, 5-95% interval, and each bar's basis where it is not the model's."""
            marks = [BAR_MARKS.get(b) for b in series(alg, op, "basis")]
            return {"label": label, "x": x, "y": series(alg, op), "ylow": series(alg, op, "low_ms"),
                    "yhigh": series(alg, op, "high_ms"), **({"marks": marks} if any(marks) else {})}

        plots = []

        def bar(title: str, series_list: list[dict]) -> None:
            plots.append({"kind": "bar", "title": title, "xlabel": "TPM 2.0 profile", "ylabel": "ms (log)",
                          "logx": False, "logy": True, "series": [_clean(d) for d in series_list],
                          "unmarked": "model prediction"})

        sig = [a for a in algorithms if "DSA" in a]
        if sig:
            s = [priced_series(a, "sign", f"{a} sign") for a in sig]
            s += [{"label": f"{lab} sign", "x": x, "y": series(sig[0], "sign", f"{lab} median_ms")}
                  for lab in CLASSICAL_SIG]
            bar("Signing per chip: ML-DSA (median, 5-95% interval) vs classical (median)", s)
            by = {(a["profile"], a["algorithm"]): a for a in attest}
            s = [{"label": f"{a} attestation", "x": x, "y": [by[(n, a)]["median_ms"] for n in names]} for a in sig]
            s += [{"label": f"{lab} attestation", "x": x, "y": [by[(n, sig[0])][f"{lab} median_ms"] for n in names]}
                  for lab in CLASSICAL_SIG]
            bar("One attestation (create AK + sign PCR digest + verify), median ms", s)
        kem = [a for a in algorithms if "KEM" in a]
        if kem:
            s = [priced_series(a, "decapsulate", f"{a} decapsulate") for a in kem]
            s += [{"label": f"{lab} (decapsulate twin)", "x": x, "y": series(kem[0], "decapsulate", f"{lab} median_ms")}
                  for lab in CLASSICAL_KEM]
            bar("Decapsulation per chip: ML-KEM (median, 5-95% interval) vs ECDH ZGen / RSA decrypt", s)
        return plots


BAR_MARKS = {predict.CALIBRATION: "published figure (calibration)",
             predict.EXTRAPOLATED: "extrapolated from a published figure"}
"""What a hatched PQC bar rests on (the legend names each hatch; a plain bar is the model's prediction)."""


def _clean(series: dict) -> dict:
    """Bars for chips that lack a figure are drawn as 0-height (a log axis cannot show None)."""
    return {**series, "y": [0.0 if v is None else v for v in series["y"]]}


def validation_text(checks: list[dict], loso: dict) -> list[str]:
    """The model against published measurements: leave-one-source-out rows, per-source summary, calibration."""
    ind = [c for c in checks if c["kind"] == "independent"]
    cal = [c for c in checks if c["kind"] == "calibration"]
    return ["Validation, leave-one-source-out (each source predicted by the model rebuilt without it; interval = "
            "5-95% over the assumption ranges):",
            table([[c["profile"], c["command"], c["predicted"], c["low"], c["high"], c["reference"], c["unit"],
                    c["predicted"] / c["reference"] - 1, "yes" if c["covered"] else "NO"] for c in ind],
                  ["core: platform", "operation", "model", "low", "high", "measured", "unit", "error", "covered"]),
            "", "Per source:", *validation.per_source_lines(loso), "",
            "Calibration (the model or profile was built from these; agreement only shows the derivation is faithful):",
            table([[c["profile"], c["command"], c["predicted"], c["reference"], c["unit"],
                    c["predicted"] / c["reference"] - 1] for c in cal],
                  ["profile / platform", "operation", "model", "reference", "unit", "error"])]


def validation_plot(checks: list[dict]) -> dict:
    """Predicted (with its interval) against measured, every independent row, log-log, with y = x."""
    ind = [c for c in checks if c["kind"] == "independent"]
    series = []
    for src in dict.fromkeys(c["source_id"] for c in ind):
        cs = [c for c in ind if c["source_id"] == src]
        series.append({"label": src + ("" if cs[0]["counted"] else " (flagged)"), "style": "points",
                       "x": [c["reference"] for c in cs], "y": [c["predicted"] for c in cs],
                       "ylow": [c["low"] for c in cs], "yhigh": [c["high"] for c in cs]})
    lo = min(min(c["reference"], c["low"]) for c in ind)
    hi = max(max(c["reference"], c["high"]) for c in ind)
    series.append({"label": "y = x", "style": "dashed", "x": [lo, hi], "y": [lo, hi]})
    return {"kind": "loglog", "title": "PQC model vs published measurements (leave-one-source-out, 5-95%)",
            "xlabel": "measured (cycles; ms where the source gives ms)", "ylabel": "predicted",
            "series": series}
