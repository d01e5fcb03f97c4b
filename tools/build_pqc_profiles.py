"""Regenerate the post-quantum companion profiles (src/trustlab/timing/profiles/pqc/<tpm2 name>-pqc.toml).

    .venv/bin/python tools/build_pqc_profiles.py

One ``pqc`` profile per shipped tpm2 profile: the chip's unit costs for ML-KEM /
ML-DSA (Keccak-f[1600], NTTs, base multiplications, polynomial passes, bus bytes),
built by trustlab.devices.tpm2.pqc_model.model from pqm4's cycle counts, our
operation counts, pqc_model/data/chips.toml and the tpm2 profile's SHA-256 rate.
A pure function of those inputs: rerun it after any of them changes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from trustlab.devices.tpm2.pqc_model import model  # noqa: E402
from trustlab.timing import registry  # noqa: E402
from trustlab.timing.profile import save_toml  # noqa: E402

OUT = ROOT / "src" / "trustlab" / "timing" / "profiles" / "pqc"


def main(argv: list[str] | None = None) -> None:
    # argparse first: `--help` (or a stray argument) must not rewrite the shipped profiles
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    names = [n for n in registry.names("tpm2") if registry.available()[n].is_relative_to(registry.SHIPPED_DIR)]
    for name in names:
        profile = model.build(registry.load(name))
        save_toml(profile, OUT / f"{profile.name}.toml")
        print(f"wrote {profile.name}")


if __name__ == "__main__":
    main()
