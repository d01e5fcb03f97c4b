"""Regenerate the shipped TPM 2.0 profiles (src/trustlab/timing/profiles/tpm2/).

    .venv/bin/python tools/build_tpm2_profiles.py            # wolfTPM + JCAlgTest profiles from ../shared/data
    .venv/bin/python tools/build_tpm2_profiles.py --swtpm-native [--repeat 20]
                                                             # measure swtpm here, fit, write swtpm-native
    .venv/bin/python tools/build_tpm2_profiles.py --sizes    # print the harness wire-size table (SIZES)

The data-derived profiles are pure functions of the data files; the
swtpm-native profile is a measurement of this machine (its provenance says so).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from trustlab.timing.profile import save_toml  # noqa: E402

OUT = ROOT / "src" / "trustlab" / "timing" / "profiles" / "tpm2"
DATA = Path("/work/shared/data") if Path("/work/shared/data").is_dir() else ROOT.parent / "shared" / "data"


def _zero_profile():
    from trustlab.devices.tpm2.cost import zero_profile

    return zero_profile()


def wire_sizes(repeat: int = 1) -> dict[tuple[str, str], tuple[int, int, int, bool]]:
    """Run the full suite through a virtual proxy and read each step's wire sizes off the trace."""
    from trustlab.devices.tpm2 import harness
    from trustlab.serving.proxy import TimingProxy
    from trustlab.serving.swtpm import Swtpm

    marks: list[tuple[str, str, int]] = []
    with Swtpm() as tpm, TimingProxy(_zero_profile(), tpm, virtual=True) as proxy:
        harness.measure(proxy.tcti, suite="full", repeat=repeat, warmup=0,
                        progress=lambda c, v: marks.append((c, v, len(proxy.records))))
        records = list(proxy.records)
    sizes = {}
    ends = [m[2] for m in marks[1:]] + [len(records)]
    for (command, variant, start), end in zip(marks, ends):
        # the timed command is the first of its name in the run (set-up precedes only split steps)
        rec = next(r for r in records[start:end] if r.command == command)
        sizes.setdefault((command, variant), (rec.in_bytes, rec.out_bytes, int(rec.terms.get("sha256_byte", 0)),
                                              rec.rc == 0))
    return sizes


def build_data_profiles() -> list[Path]:
    from trustlab.data.jcalgtest_tpm import parse_tpm_csv
    from trustlab.data.wolftpm import parse_wolftpm_csv

    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for profile in parse_wolftpm_csv(DATA / "wolftpm-benchmarks.csv"):
        path = OUT / f"{profile.name}.toml"
        save_toml(profile, path)
        written.append(path)
    for csv_path in sorted((DATA / "jcalgtest" / "tpm").glob("*.csv")):
        profile = parse_tpm_csv(csv_path)
        path = OUT / f"{profile.name}.toml"
        save_toml(profile, path)
        written.append(path)
    return written


def build_swtpm_native(repeat: int) -> Path:
    from trustlab.devices.tpm2.profiling import profile_swtpm_native

    profile = profile_swtpm_native(repeat=repeat)
    path = OUT / f"{profile.name}.toml"
    save_toml(profile, path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", action="store_true", help="print the SIZES table for formula_sets/tpm2.py")
    ap.add_argument("--swtpm-native", action="store_true", help="measure swtpm here and write swtpm-native")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    if args.sizes:
        print("SIZES: dict[tuple[str, str], tuple[int, int, int, bool]] = {")
        for (c, v), t in wire_sizes().items():
            print(f"    ({c!r}, {v!r}): {t!r},")
        print("}")
        return 0
    if args.swtpm_native:
        print(build_swtpm_native(args.repeat))
        return 0
    for path in build_data_profiles():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
