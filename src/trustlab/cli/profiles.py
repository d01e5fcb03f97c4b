"""``trustlab profiles``: list, show, import and export performance profiles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustlab.cli._output import print_json
from trustlab.textable import table
from trustlab.errors import ProfileError, one_line
from trustlab.lazy import lazy_module

# imported when an action runs, not on every CLI start (which imports this module to list it)
registry = lazy_module("trustlab.timing.registry")
pro_format = lazy_module("trustlab.timing.pro_format")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profiles", help="list, show, import and export performance profiles",
                       description="Performance profiles: the measured component costs of a chip.")
    psub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    lst = psub.add_parser("list", help="list shipped and user profiles")
    lst.add_argument("--family", help="only profiles of this family (tpm1.2, tpm2, card, ...)")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(handler=_list)

    show = psub.add_parser("show", help="show one profile's components with provenance")
    show.add_argument("name", help="profile name or path to a .toml/.pro file")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=_show)

    imp = psub.add_parser("import", help="import a .pro or .toml profile into your profile directory")
    imp.add_argument("file", type=Path)
    imp.add_argument("--name", required=True, help="name to store the profile under")
    imp.add_argument("--force", action="store_true", help="replace your profile of that name (refused without it)")
    imp.set_defaults(handler=_import)

    jc = psub.add_parser("import-jcalgtest",
                         help="import a JCAlgTest performance CSV (TPM 2.0 or Java Card) as a profile")
    jc.add_argument("file", type=Path)
    jc.add_argument("--name", help="name to store the profile under (default: derived from the file)")
    jc.add_argument("--print", dest="print_only", action="store_true", help="print the TOML instead of storing it")
    jc.add_argument("--force", action="store_true", help="replace your profile of that name (refused without it)")
    jc.set_defaults(handler=_import_jcalgtest)

    exp = psub.add_parser("export", help="print a profile as TOML or in the 2010 paper's .pro format")
    exp.add_argument("name")
    exp.add_argument("--format", choices=("pro", "toml"), default="toml")
    exp.set_defaults(handler=_export)


def _list(args: argparse.Namespace) -> int:
    if args.family is not None and not args.family.strip():
        raise ProfileError("--family: empty; name a family (tpm1.2, tpm2, card, ...) or leave the option out")
    found, broken = registry.summaries(args.family)  # an index: listing parses no profile
    if args.family and not found:
        everything, _ = registry.summaries()
        known = sorted({s.family for s in everything})
        raise ProfileError(f"no profiles of family {args.family!r} (families: {', '.join(known)})")
    rows = [{"name": s.name, "family": s.family, "version": s.version, "description": s.description,
             "components": len(s.components), "source": s.source} for s in found]
    if args.json:
        print_json(rows)
    else:
        print(table([[r["name"], r["family"], r["components"], r["description"]] for r in rows],
                    ["profile", "family", "components", "description"]))
    for message in broken:
        print(f"trustlab: warning: skipped unreadable profile: {one_line(message)}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    p = registry.load(args.name)
    if args.json:
        print_json(p.to_toml_dict())
        return 0
    print(f"{p.name} ({p.family}, version {p.version})  {p.description}")
    print(f"source: {p.provenance.describe()}")
    print(_accuracy_line(p.name) + "\n")
    rows = []
    for c in p.components.values():
        spread = f"sd {c.sd:g}" if c.sd else (f"{len(c.samples)} samples" if c.samples else "")
        prov = c.provenance
        own = [x for x in (prov.source if prov.source != p.provenance.source else "",
                           prov.table if prov.table != p.provenance.table else "", prov.note) if x]
        rows.append([c.name, c.mean, c.unit, spread, "; ".join(own)])
    print(table(rows, ["component", "ms", "per", "spread", "provenance"]))
    return 0


def _accuracy_line(name: str) -> str:
    """One line: the profile's independent accuracy as `trustlab validate` measures it."""
    from trustlab.validation import profile_accuracy

    acc = profile_accuracy(name)
    return acc.describe() if acc else "accuracy: no reference to check it against (trustlab validate)"


def _import(args: argparse.Namespace) -> int:
    path: Path = args.file
    registry.check_name(args.name)
    if path.suffix == ".pro":
        profile = pro_format.load_pro(path, name=args.name)
    elif path.suffix == ".toml":
        from dataclasses import replace
        from trustlab.timing.profile import load_toml

        profile = replace(load_toml(path), name=args.name)
    else:
        raise ProfileError(f"{path}: unknown profile format (expected .pro or .toml)")
    dest = registry.install(_unclaimed(profile, args.force))
    print(f"imported {profile.name} ({len(profile.components)} components) -> {dest}")
    return 0


def _import_jcalgtest(args: argparse.Namespace) -> int:
    from trustlab.data.jcalgtest import import_jcalgtest

    if args.name is not None:
        registry.check_name(args.name)
    if args.print_only and args.force:
        raise ProfileError("--force: replaces a stored profile, and --print stores none; drop one of them")
    profile = import_jcalgtest(args.file, name=args.name)
    if args.print_only:
        sys.stdout.write(profile.to_toml())
        return 0
    dest = registry.install(_unclaimed(profile, args.force))
    print(f"imported {profile.name} ({profile.family}, {len(profile.components)} components) -> {dest}")
    return 0


def _unclaimed(profile, force: bool):
    """``profile``, unless it would replace the user's profile of that name without ``--force``:
    an import is a file output like any other (safe_output's rule)."""
    existing = registry.user_dir() / f"{profile.name}.toml"
    if not force and (existing.is_symlink() or existing.exists()):
        raise ProfileError(f"--name {profile.name}: you have a profile of that name ({existing}); pass --force "
                           "to replace it, or choose another --name")
    return profile


def _export(args: argparse.Namespace) -> int:
    p = registry.load(args.name)
    if args.format == "pro":
        if p.family != "tpm1.2":
            raise ProfileError(f"{p.name}: the .pro format holds TPM 1.2 profiles only (this one is {p.family})")
        sys.stdout.write(pro_format.export_pro(p))
    else:
        sys.stdout.write(p.to_toml())
    return 0
