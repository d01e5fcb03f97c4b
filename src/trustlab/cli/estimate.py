"""``trustlab estimate``: a command's modelled time on a profile, without running it."""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json, table
from trustlab.errors import FormulaError, TrustlabError
from trustlab.timing import formulas, registry
from trustlab.timing.profile import Profile


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
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def _priceable(profile: Profile, key: str | None) -> list[formulas.Formula]:
    """Every formula of the profile's family that its components can price.

    Data-derived profiles rarely cover a whole family (a benchmark that never
    wrote NV has no NV cost), so "all commands" means all the ones it can time.
    """
    out = []
    for command in formulas.commands(profile.family):
        try:
            formula = formulas.lookup(profile.family, command, key)
        except FormulaError:
            continue  # this command needs a variant other than `key`
        if all(comp in profile for comp in formula.terms):
            out.append(formula)
    return out


def estimates(profile_names: list[str], commands: list[str], key: str | None,
              skip_unpriceable: bool = False) -> list[dict]:
    rows = []
    for name in profile_names:
        profile = registry.load(name)
        if commands:
            if key is not None:
                for c in commands:
                    if not formulas.variants(profile.family, c):
                        raise TrustlabError(f"{c} has no variants in family {profile.family!r}; "
                                            "--key does not apply to it")
            chosen = [formulas.lookup(profile.family, c, key) for c in commands]
        else:
            chosen = _priceable(profile, key)
            if not chosen and not skip_unpriceable:
                raise TrustlabError(f"profile {profile.name!r}: no {profile.family} formula"
                                    f"{' for --key ' + key if key else ''} can be priced with its components")
        for formula in chosen:
            ms, breakdown = formula.evaluate(profile)
            rows.append({"command": formula.command, "profile": profile.name, "ms": ms,
                         "breakdown": breakdown, "formula_source": formula.source,
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
    rows = estimates(names, args.commands, args.key, skip_unpriceable=bool(args.all_profiles))
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
    print(table([[c] + [cell.get((c, p)) for p in profiles] for c in commands], ["command"] + profiles))
    if ours:
        print(ours_note)
    return 0
