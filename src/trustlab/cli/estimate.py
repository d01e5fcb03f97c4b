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
        epilog="example: trustlab estimate --profile infineon-2010 TPM_Seal TPM_Sign --json",
    )
    p.add_argument("commands", nargs="*", metavar="COMMAND", help="e.g. TPM_Seal, TPM2_Sign")
    p.add_argument("--profile", action="append", metavar="NAME",
                   help="shipped profile name or a .toml/.pro path (repeatable)")
    p.add_argument("--all-profiles", metavar="FAMILY", nargs="?", const="tpm1.2",
                   help="every shipped profile of FAMILY (default tpm1.2)")
    p.add_argument("--key", metavar="ALG", help="formula variant, e.g. rsa2048 or ecc256 for TPM 2.0 commands")
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

        name = command if command.startswith("TPM2_") else f"TPM2_{command}"
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


def estimates(profile_names: list[str], commands: list[str], key: str | None,
              skip_unpriceable: bool = False, in_bytes: int | None = None,
              out_bytes: int | None = None) -> list[dict]:
    rows = []
    for name in profile_names:
        profile = registry.load(name)
        if (in_bytes is not None or out_bytes is not None) and profile.family != "tpm2":
            raise TrustlabError("--in-bytes/--out-bytes apply to tpm2 profiles only")
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
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    commands = list(dict.fromkeys(r["command"] for r in rows))
    ours = list(dict.fromkeys(r["command"] for r in rows if r["formula_source"].startswith("trustlab")))
    ours_note = f"formula by trustlab, not published: {', '.join(ours)}"  # priced from components all the same
    print("Modelled time (ms)")
    if len(profiles) > 6:  # a command x profile grid would not fit a terminal
        print(table([[r["profile"], r["command"], r["ms"]] for r in rows], ["profile", "command", "ms"]))
        if ours:
            print(ours_note)
        return 0
    cell = {(r["command"], r["profile"]): r["ms"] for r in rows}
    notes = {}
    for r in rows:
        if r["note"]:
            notes.setdefault(r["command"], r["note"] if len(profiles) == 1 else "overhead only (some profiles)")
    headers = ["command"] + profiles + (["note"] if notes else [])
    print(table([[c] + [cell.get((c, p)) for p in profiles] + ([notes.get(c, "")] if notes else [])
                 for c in commands], headers))
    if ours:
        print(ours_note)
    return 0
