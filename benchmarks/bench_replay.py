"""``trustlab replay`` speed: a 10,000-command trace priced on 25 TPM 2.0 profiles (issue 25: "seconds").

Figures (one run):

* ``commands`` / ``profiles``: the trace (the four shipped workloads tiled, each copy its own clients) and
  the profile list (every tpm2 profile, cycled up to 25).
* ``read_s``: reading and checking the trace. ``replay_s``: pricing it on the 25 profiles with 200 draws
  (median, p95, wall time with the clients' time, bus share, top commands, cannot-price notes).
  ``replay_pqc_s``: the same with ``--pqc sign=ML-DSA-65,kem=ML-KEM-768`` (the post-quantum cost model's
  prices are computed once per profile and operation). ``cli_s``: the whole ``trustlab replay --json``
  command in a fresh process (imports included).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRACES = Path(__file__).resolve().parents[1] / "src" / "trustlab" / "data" / "workloads"


def tiled_trace(path: Path, n: int) -> int:
    """Write ``n`` commands: the shipped traces one after another, again and again (clients renumbered)."""
    lines = []
    for f in sorted(TRACES.glob("*.jsonl")):
        lines.append([json.loads(x) for x in f.read_text().splitlines() if x.strip()])
    out, seq, copy, offset = [], 0, 0, 0.0
    while len(out) < n:
        for recs in lines:
            copy += 1
            for r in recs:
                if len(out) >= n:
                    break
                seq += 1
                out.append(json.dumps({**r, "seq": seq, "client": copy * 1000 + r["client"],
                                       "t_ms": offset + r["t_ms"]}))
            offset += max(r["t_ms"] + r["served_ms"] for r in recs) + 1.0
    path.write_text("\n".join(out) + "\n")
    return len(out)


def run(quick: bool = False) -> dict[str, Any]:
    from trustlab.replay import load, pqc
    from trustlab.replay import run as replaying
    from trustlab.timing import registry

    n = 1000 if quick else 10_000
    names = registry.names("tpm2")
    profiles = (names * 2)[:25]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        n = tiled_trace(path, n)
        t0 = time.perf_counter()
        trace = load.read(path)
        t1 = time.perf_counter()
        replaying.replay(trace, profiles, draws=200)
        t2 = time.perf_counter()
        replaying.replay(trace, profiles, draws=200, choice=pqc.parse_choice("sign=ML-DSA-65,kem=ML-KEM-768"))
        t3 = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "trustlab", "replay", str(path), "--profiles", ",".join(names),
                              "--json"], capture_output=True, text=True)
        t4 = time.perf_counter()
        assert cli.returncode == 0, cli.stderr
    return {"commands": n, "profiles": len(profiles), "read_s": t1 - t0, "replay_s": t2 - t1,
            "replay_pqc_s": t3 - t2, "cli_s": t4 - t3, "cli_profiles": len(names)}
