"""``trustlab estimate``: a command's modelled time on a profile, without running it."""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json, table
from trustlab.errors import TrustlabError
from trustlab.timing import formulas, registry


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


def estimates(profile_names: list[str], commands: list[str], key: str | None) -> list[dict]:
    rows = []
    for name in profile_names:
        profile = registry.load(name)
        wanted = commands or formulas.commands(profile.family)
        if not wanted:
            raise TrustlabError(f"profile {profile.name!r}: no formulas for family {profile.family!r}")
        for command in wanted:
            formula = formulas.lookup(profile.family, command, key)
            ms, breakdown = formula.evaluate(profile)
            rows.append({"command": formula.command, "profile": profile.name, "ms": ms,
                         "breakdown": breakdown, "formula_source": formula.source,
                         "profile_source": profile.provenance.describe()})
    return rows


def run(args: argparse.Namespace) -> int:
    names = list(args.profile or [])
    if args.all_profiles:
        names += registry.names(args.all_profiles)
    if not names:
        raise TrustlabError("give --profile NAME (or --all-profiles); see 'trustlab profiles list'")
    rows = estimates(names, args.commands, args.key)
    if args.json:
        print_json(rows)
        return 0
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    commands = list(dict.fromkeys(r["command"] for r in rows))
    cell = {(r["command"], r["profile"]): r["ms"] for r in rows}
    print("Modelled time (ms)")
    print(table([[c] + [cell.get((c, p)) for p in profiles] for c in commands], ["command"] + profiles))
    return 0
