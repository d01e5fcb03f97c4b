"""Regenerate the post-quantum operation counts (src/trustlab/devices/tpm2/pqc_model/data/op_counts.json).

    .venv/bin/python tools/build_pqc_counts.py [--signs 1000] [--runs 100]

Runs the counting FIPS 203/204 implementations over many random inputs
(seeds 0..n-1) and stores every run's unit counts: ML-DSA signing is a random
variable (rejection loop), and matrix sampling varies a little everywhere.
The file is a pure function of the code and the seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from trustlab.devices.tpm2.pqc_model import counting  # noqa: E402
from trustlab.devices.tpm2.pqc_model.params import DSA_OPERATIONS, KEM_OPERATIONS, MLDSA, MLKEM  # noqa: E402

OUT = ROOT / "src" / "trustlab" / "devices" / "tpm2" / "pqc_model" / "data" / "op_counts.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--signs", type=int, default=1000, help="ML-DSA signings per parameter set (default 1000)")
    ap.add_argument("--runs", type=int, default=100, help="runs of every other operation (default 100)")
    args = ap.parse_args()
    if args.signs < 1 or args.runs < 1:
        ap.error("--signs and --runs must be at least 1 (the model needs a distribution)")
    table: dict = {}
    jobs = [(a, op) for a in MLKEM for op in KEM_OPERATIONS] + [(a, op) for a in MLDSA for op in DSA_OPERATIONS]
    for algorithm, op in jobs:
        n = args.signs if op == "sign" else args.runs
        t0 = time.time()
        runs = [dict(counting.run(algorithm, op, seed)) for seed in range(n)]
        units = sorted({u for r in runs for u in r})
        table.setdefault(algorithm, {})[op] = {"units": units, "runs": [[r.get(u, 0) for u in units] for r in runs]}
        print(f"{algorithm} {op}: {n} runs in {time.time() - t0:.1f} s", flush=True)
    doc = {"generator": "tools/build_pqc_counts.py", "message_bytes": counting.DEFAULT_MESSAGE_BYTES,
           "seeds": "runs use random.Random(i) for i in 0..n-1", "counts": table}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
