"""``trustlab tiga``: the Technology Independent Gain Assessment of a card platform (Mayes 2017, §V.F).

TIGA is the percentage of a block encryption the crypto co-processor
completes in the time the CPU needs for one 16-byte block XOR: high values
mean block encryptions are nearly as cheap as XORs, so modes that spend more
encryptions to save CPU work (ETM, CCM) win on small messages.
"""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json
from trustlab.textable import table
from trustlab.errors import TrustlabError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tiga", help="TIGA of smart-card platforms (block XOR time / block encrypt time)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example: trustlab tiga --platform sle78-aes --json")
    p.add_argument("--platform", action="append", metavar="NAME",
                   help="platform (repeatable; default all named platforms), or PROFILE:CIPHER")
    p.add_argument("--source", choices=("scope", "benchmark", "both"), default="both",
                   help="Table XI oscilloscope figures, the primitive benchmark tables, or both")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def rows(names: list[str], source: str) -> list[dict]:
    from trustlab.apps.ae.analysis import coprocessor_tiga_s3cc9e8, tiga
    from trustlab.devices.card.platforms import platform
    from trustlab.experiments.ae import TABLE_XI

    out = []
    sources = ("scope", "benchmark") if source == "both" else (source,)
    for name in names:
        plat = platform(name)
        prof = plat.profile()
        found = False
        for src in sources:
            try:
                t = tiga(plat, src)
            except TrustlabError:
                if source != "both":
                    raise
                continue
            found = True
            out.append({"platform": plat.name, "cipher": plat.cipher, "profile": prof.name, "source": src,
                        "xor_ms": t.xor_ms, "encrypt_ms": t.encrypt_ms, "tiga_pct": t.tiga_pct,
                        "paper_pct": TABLE_XI.get(plat.name) if src == "scope" else None,
                        "components": list(t.components),
                        "provenance": {c: prof[c].provenance.describe() for c in t.components}})
        if not found:
            raise TrustlabError(f"platform {plat.name}: profile {prof.name} has neither scope nor benchmark "
                                "XOR/encrypt figures")
        if plat.name == "s3cc9e8" and source in ("benchmark", "both"):
            co = coprocessor_tiga_s3cc9e8(prof)
            for cipher, key, paper in (("des", "tiga_des_pct", 100.0), ("tdes", "tiga_3des_pct", 33.0)):
                out.append({"platform": plat.name, "cipher": cipher, "profile": prof.name,
                            "source": "co-processor (Table VI differences, §V.D)",
                            "xor_ms": co["inline_xor_ms"],
                            "encrypt_ms": co["des_run_ms"] * (1 if cipher == "des" else 3),
                            "tiga_pct": co[key], "paper_pct": paper, "components": [], "provenance": {}})
    return out


def run(args: argparse.Namespace) -> int:
    from trustlab.devices.card.platforms import PLATFORMS

    from trustlab.experiments.ae import platform_names

    result = rows(platform_names(args.platform, list(PLATFORMS)), args.source)
    if args.json:
        print_json(result)
        return 0
    print("TIGA = block XOR ms / block encrypt ms x 100  (Mayes 2017, §V.F)")
    print(table([[r["platform"], r["cipher"], r["source"], r["xor_ms"], r["encrypt_ms"], r["tiga_pct"],
                  r["paper_pct"]] for r in result],
                ["platform", "cipher", "source", "XOR ms", "encrypt ms", "TIGA %", "paper %"]))
    return 0
