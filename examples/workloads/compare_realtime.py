"""Done-when check of issue 25: a realtime `serve` run of each workload against its replay.

For each workload: one `serve --virtual` run gives the client's own time (its wall time less the
time serve spent answering, i.e. the sum of served_ms in that run's trace); then per PROFILE one
realtime run (wall time W, and its trace for the responses where swtpm alone was slower than the
model: `late`, whose excess no replay can know). Each run is repeated (--repeats, default 3) and the fastest counts (realtime: net of its late
excess), as noise on a shared machine only adds. The replay prices the workload's recorded trace with
draw 0 = serve's own draws for --seed 0 (and gives the median beside it). Predicted wall =
client's own time + replayed TPM time + late excess; the error is W / predicted - 1. Also the TPM part
alone: the realtime run's own sum of served_ms (what the client waited for responses, less late excess)
against the replay (served_error).

    python examples/workloads/compare_realtime.py PROFILE [PROFILE...] [--workloads a,b] [--port P]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402

from trustlab.replay import load  # noqa: E402
from trustlab.replay import run as replaying  # noqa: E402


def _modelled(trace: Path) -> float:
    return sum(json.loads(x)["modelled_ms"] for x in trace.read_text().splitlines() if x.strip())


def _served(trace: Path) -> tuple[float, float, int]:
    rs = [json.loads(x) for x in trace.read_text().splitlines() if x.strip()]
    late = sum(max(0.0, r["backend_ms"] - r["modelled_ms"]) for r in rs if r.get("late"))
    return sum(r["served_ms"] for r in rs if r["command"] != "RM_FlushOnClose"), late, len(rs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--workloads", default=",".join(record.WORKLOADS))
    ap.add_argument("--port", type=int, default=23820)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each; the fastest counts (noise only adds)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads.split(","):
            client = float("inf")
            for k in range(args.repeats):
                vt = Path(tmp) / f"{w}-virtual-{k}.jsonl"
                wall_v = record.run(w, "swtpm-native", args.port, virtual=True, trace=vt)
                client = min(client, wall_v * 1000.0 - _served(vt)[0])
            recorded = load.read(record.TRACES / f"{w}.jsonl")
            for p in args.profiles:
                runs = []
                for k in range(args.repeats):
                    rt = Path(tmp) / f"{w}-{p}-{k}.jsonl"
                    wall = record.run(w, p, args.port, virtual=False, trace=rt) * 1000.0
                    total, late, n = _served(rt)
                    runs.append((wall - late, wall, late, n, total, _modelled(rt)))
                _, wall, late, n, served, modelled = min(runs)
                rep = replaying.replay(recorded, [p], draws=200, seed=0)["profiles"][0]
                predicted = client + rep["tpm_seed_draw_ms"] + late
                row = {"workload": w, "profile": p, "realtime_ms": wall, "client_ms": client,
                       "realtime_served_ms": served, "realtime_modelled_ms": modelled,
                       "overshoot_ms_per_command": (served - late - modelled) / n, "client_in_run_ms": wall - served,
                       "served_error": (served - late) / rep["tpm_seed_draw_ms"] - 1,
                       "replay_seed_draw_ms": rep["tpm_seed_draw_ms"], "replay_median_ms": rep["tpm_median_ms"],
                       "late_excess_ms": late, "predicted_ms": predicted, "error": wall / predicted - 1,
                       "commands": n}
                rows.append(row)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
