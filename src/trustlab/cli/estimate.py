"""``trustlab estimate``: a command's modelled time on a profile, without running it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from trustlab.argtypes import count
from trustlab.cli._output import print_json
from trustlab.textable import table
from trustlab.errors import FormulaError, TrustlabError
from trustlab.lazy import lazy_module

if TYPE_CHECKING:
    from trustlab.timing.profile import Profile

# imported when an estimate runs, not on every CLI start (which imports this module to list it)
formulas = lazy_module("trustlab.timing.formulas")
registry = lazy_module("trustlab.timing.registry")
tpm2_rules = lazy_module("trustlab.timing.formula_sets.tpm2")

MAX_FRAME = 1 << 24  # bytes of one command or response frame (a TPM's are a few KiB)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate", help="analytic time of commands on a profile",
        description="Evaluate the cost formulas of commands against performance profiles. "
        "With no COMMAND, every command with a formula in the profile's family is estimated.",
        epilog="examples: trustlab estimate --profile infineon-2010 TPM_Seal TPM_Sign --json;  "
        "trustlab estimate --profile sealsq-qvault-pqc-tpm-wolftpm TPM2_SignDigest --key ML-DSA-65",
    )
    p.add_argument("commands", nargs="*", metavar="COMMAND", help="e.g. TPM_Seal, TPM2_Sign")
    p.add_argument("--profile", action="append", metavar="NAME",
                   help="shipped profile name or a .toml/.pro path (repeatable)")
    p.add_argument("--all-profiles", metavar="FAMILY", nargs="?", const="tpm1.2",
                   help="every shipped profile of FAMILY (default tpm1.2)")
    p.add_argument("--key", metavar="ALG", help="formula variant, e.g. rsa2048 or ecc256 for TPM 2.0 commands; "
                   "a post-quantum parameter set (ML-DSA-44/65/87, ML-KEM-768/1024) for the TPM 2.0 Library 1.85 "
                   "commands serve answers (TPM2_SignDigest, TPM2_Encapsulate, ..., and CreatePrimary/Create/Load "
                   "with such a key), priced by the PQC cost model as serve charges them")
    p.add_argument("--in-bytes", type=count(0, MAX_FRAME, "--in-bytes"), metavar="N",
                   help="TPM 2.0: price the command frame as N bytes (default: the recorded wire size)")
    p.add_argument("--out-bytes", type=count(0, MAX_FRAME, "--out-bytes"), metavar="N",
                   help="TPM 2.0: price the response frame as N bytes (default: the recorded wire size)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def _priceable(profile: Profile, key: str | None) -> list[formulas.Formula]:
    """Every formula of the profile's family that its components can price.

    Data-derived profiles rarely cover a whole family (a benchmark that never
    wrote NV has no NV cost), so "all commands" means all the ones it can time
    - for TPM 2.0 that is every one, as ``serve`` charges them (see :func:`_as_served`).
    """
    out = []
    for command in formulas.commands(profile.family):
        try:
            formula = formulas.lookup(profile.family, command, key)
        except FormulaError:
            continue  # this command needs a variant other than `key`
        if profile.family == "tpm2" or all(comp in profile for comp in formula.terms):
            out.append(formula)
    return out


def _tpm2_formula(command: str, key: str | None) -> formulas.Formula:
    """A TPM 2.0 command's formula; one with no recorded sizes is overhead + a bare header each way."""
    try:
        return formulas.lookup("tpm2", command, key)
    except FormulaError:
        from trustlab.devices.tpm2.commands import CODES_BY_NAME

        name = tpm2_name(command)
        if name not in CODES_BY_NAME or key is not None or formulas.variants("tpm2", name):
            raise  # unknown, or it has formulas and needs a --key
        n_in, n_out = tpm2_rules.MINIMAL_FRAME
        return formulas.Formula(name, tpm2_rules.command_terms(name, None, n_in, n_out), "tpm2",
                                f"{tpm2_rules.SOURCE}; no recorded wire sizes: {n_in} in / {n_out} out bytes "
                                "assumed (--in-bytes/--out-bytes)")


def _as_served(formula: formulas.Formula, profile: Profile, in_bytes: int | None,
               out_bytes: int | None) -> tuple[formulas.Formula, str]:
    """The formula as ``serve`` charges it on ``profile``, and a note when that is overhead only.

    The proxy drops the terms whose component the profile lacks (and traces
    the command as unmodelled); commands without a primitive of their own
    cost overhead + bytes. Both are labelled "overhead only".
    """
    terms = dict(formula.terms)
    if in_bytes is not None:
        terms["ohir"] = in_bytes
    if out_bytes is not None:
        terms["ohor"] = out_bytes
    dropped = [c for c in terms if c not in profile]
    terms = {c: n for c, n in terms.items() if c in profile}
    note = ""
    if set(terms) <= set(tpm2_rules.OVERHEAD_COMPONENTS):
        note = "overhead only" + (f" (profile lacks {', '.join(dropped)})" if dropped else "")
    elif dropped:
        note = f"profile lacks {', '.join(dropped)}: not charged"
    return formulas.Formula(formula.command, terms, formula.family, formula.source), note


def _pqc_commands(commands: list[str], key: str | None) -> tuple[list[str], list[tuple[str, str]]]:
    """Split COMMANDs into the classical ones and (command, parameter set) pairs the PQC model prices: the
    1.85 commands, and CreatePrimary/Create/Load/ContextLoad/Quote with a post-quantum --key. With no
    COMMAND, the 1.85 commands (or, with a post-quantum --key, every command taking it) are listed."""
    from trustlab.devices.tpm2.pqc import operations as pqc_ops  # not at CLI start (a lazy module imports its package)

    pset = pqc_ops.parameter_set(key) if key is not None else None
    if not commands:
        if key is not None and pset is None:
            return [], []  # a classical --key: the classical listing only
        chosen = list(pqc_ops.OPERATIONS) if pset else list(pqc_ops.NEW_IN_185)
        return [], [(c, s) for c in chosen for s in pqc_ops.parameter_sets(c) if pset in (None, s)]
    classical, pqc = [], []
    for c in commands:
        name = tpm2_name(c)
        if key is not None and pset is None and name in pqc_ops.OPERATIONS and pqc_ops.unknown_post_quantum(key):
            raise TrustlabError(f"{name}: unknown post-quantum key {key!r} "
                                f"(known: {', '.join(pqc_ops.parameter_sets(name))})")
        if name in pqc_ops.NEW_IN_185 and key is not None and pset is None:  # an RSA/ECC --key
            if name not in pqc_ops.CLASSICAL_AS:
                raise TrustlabError(f"{name} takes a post-quantum key ({', '.join(pqc_ops.parameter_sets(name))}), "
                                    f"not --key {key}")
            classical.append(pqc_ops.CLASSICAL_AS[name])  # priced as the 1.83 command, as serve does
        elif name in pqc_ops.NEW_IN_185 or (pset is not None and name in pqc_ops.OPERATIONS):
            sets = pqc_ops.parameter_sets(name)
            if key is not None and pset not in sets:
                raise TrustlabError(f"{name} takes a post-quantum key ({', '.join(sets)}), not --key {key}")
            pqc += [(name, s) for s in sets if pset in (None, s)]
        elif pset is not None:
            raise TrustlabError(f"{c} takes no post-quantum key; --key {key} applies to "
                                f"{', '.join(pqc_ops.OPERATIONS)}")
        else:
            classical.append(c)
    return classical, pqc


def tpm2_name(command: str) -> str:
    return command if command.startswith("TPM2_") else f"TPM2_{command}"


def _pqc_rows(profile: Profile, pairs: list[tuple[str, str]], in_bytes: int | None,
              out_bytes: int | None) -> list[dict]:
    """The PQC model's price of each (command, parameter set) on ``profile``, as serve's handler charges it."""
    from trustlab.devices.tpm2.pqc import operations as pqc_ops
    from trustlab.serving.tpm2 import limits

    limit = limits.for_profile(profile.name).command
    rows = []
    for command, algorithm in pairs:
        e = pqc_ops.estimate(profile, command, algorithm, in_bytes, out_bytes)
        largest = max(e.in_bytes, e.out_bytes)
        note = (f"does not fit: {largest}-byte frame over the chip's {limit}-byte buffer" if largest > limit else "")
        rows.append({"command": command, "key": algorithm, "profile": profile.name, "ms": e.ms,
                     "breakdown": e.breakdown, "note": note, "in_bytes": e.in_bytes, "out_bytes": e.out_bytes,
                     "formula_source": f"PQC cost model ({e.operation}: trustlab.devices.tpm2.pqc.pricing, the price "
                                       "serve's 1.85 extension charges, at its means)",
                     "profile_source": profile.provenance.describe()})
    return rows


def estimates(profile_names: list[str], commands: list[str], key: str | None,
              skip_unpriceable: bool = False, in_bytes: int | None = None,
              out_bytes: int | None = None) -> list[dict]:
    rows = []
    for name in profile_names:
        profile = registry.load(name)
        if (in_bytes is not None or out_bytes is not None) and profile.family != "tpm2":
            raise TrustlabError("--in-bytes/--out-bytes apply to tpm2 profiles only")
        classical, pqc, classical_key = commands, [], key
        if profile.family == "tpm2":
            from trustlab.devices.tpm2.pqc import operations as pqc_ops

            classical, pqc = _pqc_commands(commands, key)
            if key is not None and pqc_ops.parameter_set(key) is not None:
                classical_key = None
        # no COMMAND: the classical listing too, unless --key is a post-quantum parameter set
        if classical or (not commands and classical_key == key):
            rows += _classical(profile, classical, classical_key, skip_unpriceable, in_bytes, out_bytes)
        rows += _pqc_rows(profile, pqc, in_bytes, out_bytes)
    return rows


def _classical(profile: Profile, commands: list[str], key: str | None, skip_unpriceable: bool,
               in_bytes: int | None, out_bytes: int | None) -> list[dict]:
    """The formulas' estimates (every command with a formula in the family when ``commands`` is empty)."""
    rows = []
    if commands:
        if key is not None:
            for c in commands:
                if not formulas.variants(profile.family, c):
                    raise TrustlabError(f"{c} has no variants in family {profile.family!r}; "
                                        "--key does not apply to it")
        if profile.family == "tpm2":
            chosen = [_tpm2_formula(c, key) for c in commands]
        else:
            chosen = [formulas.lookup(profile.family, c, key) for c in commands]
    else:
        chosen = _priceable(profile, key)
        if not chosen and not skip_unpriceable:
            raise TrustlabError(f"profile {profile.name!r}: no {profile.family} formula"
                                f"{' for --key ' + key if key else ''} can be priced with its components")
    for formula in chosen:
        note = ""
        if profile.family == "tpm2":
            formula, note = _as_served(formula, profile, in_bytes, out_bytes)
        ms, breakdown = formula.evaluate(profile)
        rows.append({"command": formula.command, "profile": profile.name, "ms": ms,
                     "breakdown": breakdown, "note": note, "formula_source": formula.source,
                     "profile_source": profile.provenance.describe()})
    return rows


def run(args: argparse.Namespace) -> int:
    names = list(args.profile or [])
    if args.all_profiles:
        family_names = registry.names(args.all_profiles)
        if not family_names:
            raise TrustlabError(f"no profiles of family {args.all_profiles!r} "
                                f"(families: {', '.join(registry.families())})")
        if args.all_profiles not in formulas.families():
            raise TrustlabError(f"family {args.all_profiles!r} has no command formulas to estimate "
                                f"(families with formulas: {', '.join(formulas.families())})")
        names += family_names
    if not names:
        raise TrustlabError("give --profile NAME (or --all-profiles); see 'trustlab profiles list'")
    rows = estimates(names, args.commands, args.key, skip_unpriceable=bool(args.all_profiles),
                     in_bytes=args.in_bytes, out_bytes=args.out_bytes)
    if not rows:
        raise TrustlabError("none of the selected profiles can price any command"
                            + (f" with --key {args.key}" if args.key else ""))
    if args.json:
        print_json(rows)
        return 0
    for r in rows:  # a post-quantum row is one command at one parameter set
        r["label"] = f"{r['command']} {r['key']}" if r.get("key") else r["command"]
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    commands = list(dict.fromkeys(r["label"] for r in rows))
    ours = list(dict.fromkeys(r["command"] for r in rows if r["formula_source"].startswith("trustlab")))
    ours_note = f"formula by trustlab, not published: {', '.join(ours)}"  # priced from components all the same
    print("Modelled time (ms)")
    if len(profiles) > 6:  # a command x profile grid would not fit a terminal
        print(table([[r["profile"], r["label"], r["ms"]] for r in rows], ["profile", "command", "ms"]))
        if ours:
            print(ours_note)
        return 0
    cell = {(r["label"], r["profile"]): r["ms"] for r in rows}
    notes = {}
    for r in rows:
        if r["note"]:
            notes.setdefault(r["label"], r["note"] if len(profiles) == 1 else
                             "does not fit (some profiles)" if r["note"].startswith("does not fit") else
                             "overhead only (some profiles)")
    headers = ["command"] + profiles + (["note"] if notes else [])
    print(table([[c] + [cell.get((c, p)) for p in profiles] + ([notes.get(c, "")] if notes else [])
                 for c in commands], headers))
    if ours:
        print(ours_note)
    return 0
