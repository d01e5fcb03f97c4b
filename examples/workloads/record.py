"""Record (or time) the shipped workloads through `trustlab serve`, with the real clients.

    python examples/workloads/record.py                  # re-record src/trustlab/data/workloads/*.jsonl
    python examples/workloads/record.py --time PROFILE   # realtime run: the client's wall time, as JSON

Each workload runs in a fresh temporary directory against a fresh serve (its own swtpm). Recording uses
--virtual (nothing is held: the trace's arrival times then carry only the clients' own time) on
swtpm-native; the trace's fields do not depend on the recording profile. --time runs serve in realtime on
PROFILE and prints the workload's wall time; --time PROFILE --virtual the same without holding (the
client's own time plus swtpm's). The port is --port P (data) and P+1 (control).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = HERE.parents[1] / "src" / "trustlab" / "data" / "workloads"
"""Where the recorded traces live (package data: `trustlab run workloads` reads them)."""
WORKLOADS = {
    "attestation": ["sh", str(HERE / "attestation.sh")],
    "seal-unseal": ["sh", str(HERE / "seal.sh")],
    "tls-key": [sys.executable, str(HERE / "tls_key.py")],
    "measured-boot": [sys.executable, str(HERE / "measured_boot.py")],
}


def _wait(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited early ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("serve did not start listening")


def run(workload: str, profile: str, port: int, *, virtual: bool, trace: Path | None) -> float:
    """Start serve, run the client in a temporary directory, stop serve; the client's wall time (s)."""
    cmd = [sys.executable, "-m", "trustlab", "serve", "--profile", profile, "--port", str(port)]
    if virtual:
        cmd.append("--virtual")
    if trace is not None:
        trace.unlink(missing_ok=True)
        cmd += ["--trace", str(trace)]
    serve = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait(port, serve)
        tcti = f"swtpm:host=127.0.0.1,port={port}"
        client = WORKLOADS[workload] + ([f"swtpm:host=127.0.0.1,port={port}"] if WORKLOADS[workload][0] != "sh" else [])
        env = dict(os.environ, TPM2TOOLS_TCTI=tcti)
        with tempfile.TemporaryDirectory() as work:
            started = time.perf_counter()
            done = subprocess.run(client, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
            wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{workload}: client failed: {done.stderr.strip()[-500:]}")
        time.sleep(0.5)  # the last process's exit: the resource manager flushes its objects (traced)
        return wall
    finally:
        serve.send_signal(2)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workloads", nargs="*", default=list(WORKLOADS), help=f"of {', '.join(WORKLOADS)}")
    ap.add_argument("--time", metavar="PROFILE", help="time the workload on PROFILE instead of recording it")
    ap.add_argument("--virtual", action="store_true", help="with --time: serve --virtual (client time only)")
    ap.add_argument("--trace-dir", type=Path, help="with --time: also keep the run's trace there")
    ap.add_argument("--port", type=int, default=23810)
    args = ap.parse_args()
    if not shutil.which("tpm2_quote"):
        raise SystemExit("tpm2-tools not found")
    for w in args.workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r} (known: {', '.join(WORKLOADS)})")
        if args.time:
            trace = None if args.trace_dir is None else args.trace_dir / f"{w}.jsonl"
            wall = run(w, args.time, args.port, virtual=args.virtual, trace=trace)
            print(json.dumps({"workload": w, "profile": args.time, "virtual": args.virtual, "wall_s": wall}),
                  flush=True)
        else:
            out = TRACES / f"{w}.jsonl"
            run(w, "swtpm-native", args.port, virtual=True, trace=out)
            print(f"recorded {out} ({sum(1 for _ in out.open())} commands)", flush=True)


if __name__ == "__main__":
    main()
