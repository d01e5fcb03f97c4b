"""Run wolfTPM's post-quantum examples and its own test program against ``trustlab serve`` (and its fwTPM).

    .venv/bin/python tools/wolftpm_examples.py WOLFTPM_BUILD [--profile NAME] [--realtime] [--peer] [--json]

WOLFTPM_BUILD is a wolfTPM tree built outside this repository with
``./configure --enable-v185 --enable-fwtpm --enable-swtpm`` against a wolfSSL
with ML-DSA and ML-KEM: its examples then reach a TPM over TCP with the
MS-simulator protocol (``TPM2_SWTPM_PORT``). This starts ``trustlab serve
--profile NAME`` (virtual time unless ``--realtime``) on free ports and runs,
each against a fresh TPM:

- ``tests/unit.test`` - wolfTPM's own wrapper tests, classical and PQC (counted per test line);
- ``examples/pqc/pqc_ctrl.sh`` - the PQC control-tool suite (20 tests);
- ``examples/pqc/{mldsa_sign, mldsa_verify_neg, mlkem_encap, mlkem_decap_neg, pqc_mssim_e2e}``;
- ``examples/keygen/keygen`` for every ML-DSA, HashML-DSA and ML-KEM parameter set.

``--peer`` runs the same against wolfTPM's ``src/fwtpm/fwtpm_server`` for the
peer's counts beside ours. Exit status 0 when ours passed everything the peer
passed (or everything, without ``--peer``).

``--bench`` instead runs wolfTPM's ``examples/bench/bench`` - the program
behind wolfTPM's published per-chip figures - against serve in real time and
prints its average per operation beside the chip's published figure
(``pqc_model/data/silicon.toml``). The bench times each operation for a fixed
window (1 s; 15 s for key generation) and divides: for ML-DSA signing (a
rejection loop, single runs 0.4x-2.4x the mean) that is two or three draws, and
serve's default ``--seed 0`` makes them the same draws on every run. So
``--maxdur MS`` widens the window (bench's ``-maxdur=``) and ``--runs N``
repeats the bench against serves seeded ``--seed`` S, S+1, ...; the printed average is total
time over total operations of all runs, with the operation count.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from wolftpm_differential import free_port_pair, start_fwtpm  # tools/ (this script's directory) is on sys.path

EXAMPLES = ("mldsa_sign", "mldsa_verify_neg", "mlkem_encap", "mlkem_decap_neg", "pqc_mssim_e2e")
KEYGEN = ([f"-mldsa={p}" for p in (44, 65, 87)] + [f"-hash_mldsa={p}" for p in (44, 65, 87)]
          + [f"-mlkem={p}" for p in (512, 768, 1024)])


@dataclass
class Result:
    name: str
    passed: int
    total: int
    note: str = ""


def wait_listening(port: int, proc: subprocess.Popen, what: str) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"wolftpm_examples: {what} exited with status {proc.returncode}") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"wolftpm_examples: {what} did not listen on port {port} within 30 s")


@contextmanager
def serve(profile: str, realtime: bool, seed: int = 0) -> Iterator[int]:
    """``trustlab serve`` (this checkout's) on free ports; yields the data port."""
    port = free_port_pair()
    cmd = [sys.executable, "-m", "trustlab", "serve", "--profile", profile, "--port", str(port), "--seed", str(seed)]
    if not realtime:
        cmd.append("--virtual")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc, "trustlab serve")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def fwtpm(build: Path) -> Iterator[int]:
    """wolfTPM's fwtpm_server with fresh NV in a temporary directory; yields its command port."""
    with tempfile.TemporaryDirectory(prefix="fwtpm-") as tmp:
        proc, port = start_fwtpm(build, Path(tmp))
        try:
            yield port
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _run(cmd: list[str], build: Path, port: int, timeout: float) -> tuple[int, str]:
    env = {**os.environ, "TPM2_SWTPM_HOST": "127.0.0.1", "TPM2_SWTPM_PORT": str(port)}
    try:
        done = subprocess.run(cmd, cwd=build, env=env, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f} s"


def run_all(build: Path, start) -> list[Result]:
    """Each program against a TPM from ``start()`` (a context manager yielding its port)."""
    results = []
    with start() as port:
        code, out = _run(["./tests/unit.test"], build, port, 1800)
        passed = len(re.findall(r":\s+Passed\s*$", out, re.M))
        failed = len(re.findall(r":\s+Fail", out, re.M))
        results.append(Result("tests/unit.test", passed, passed + failed, f"exit {code}"))
    with start() as port:
        code, out = _run(["bash", "examples/pqc/pqc_ctrl.sh", "./examples/pqc/pqc_ctrl"], build, port, 1800)
        m = re.search(r"Results: (\d+) total, (\d+) passed, (\d+) failed", out)
        fails = "; ".join(sorted(set(re.findall(r"FAIL\s+(\S+\s+0x[0-9a-f]+: \S+)", out))))
        results.append(Result("examples/pqc/pqc_ctrl.sh", int(m[2]) if m else 0, int(m[1]) if m else 20,
                              fails or f"exit {code}"))
    for name in EXAMPLES:
        with start() as port:
            code, out = _run([f"./examples/pqc/{name}"], build, port, 600)
            results.append(Result(f"examples/pqc/{name}", int(code == 0), 1, out.strip().splitlines()[-1][:90]
                                  if out.strip() else f"exit {code}"))
    with start() as port, tempfile.TemporaryDirectory() as tmp:
        bad = []
        for arg in KEYGEN:
            code, out = _run(["./examples/keygen/keygen", f"{tmp}/key.bin", arg], build, port, 600)
            if code != 0:
                bad.append(f"{arg} (exit {code})")
        results.append(Result("examples/keygen/keygen (9 sets)", len(KEYGEN) - len(bad), len(KEYGEN),
                              "; ".join(bad)))
    return results


BENCH_LINE = re.compile(r"^(?P<op>.+?)\s+(?P<n>\d+) ops took (?P<sec>[\d.]+) sec, avg (?P<ms>[\d.]+) ms", re.M)
BENCH_NAMES = {("ML-DSA", "key gen"): ("ML-DSA-65", "keygen"), ("ML-DSA", "sign"): ("ML-DSA-65", "sign"),
               ("ML-DSA", "verify"): ("ML-DSA-65", "verify"), ("ML-KEM", "key gen"): ("ML-KEM-768", "keygen"),
               ("ML-KEM", "encap"): ("ML-KEM-768", "encapsulate"), ("ML-KEM", "decap"): ("ML-KEM-768", "decapsulate")}
"""bench.c's labels of its post-quantum lines -> (parameter set, operation) as silicon.toml names them."""


@dataclass
class BenchRow:
    operation: str
    ops: int
    total_s: float
    published_ms: float | None = None

    @property
    def avg_ms(self) -> float:
        return 1000.0 * self.total_s / self.ops


def bench_once(build: Path, profile: str, seed: int, maxdur_ms: int | None) -> list[tuple[str, int, float]]:
    """(operation, ops, seconds) of one run of wolfTPM's bench against serve in real time, seeded ``seed``."""
    args = ["./examples/bench/bench"] + ([f"-maxdur={maxdur_ms}"] if maxdur_ms else [])
    with serve(profile, realtime=True, seed=seed) as port:
        code, out = _run(args, build, port, 7200)
    rows = [(" ".join(m["op"].split()), int(m["n"]), float(m["sec"])) for m in BENCH_LINE.finditer(out)]
    if code != 0 or not rows:
        raise SystemExit(f"wolftpm_examples: bench failed (exit {code}): {out.strip()[-300:]}")
    return rows


def published(profile: str) -> dict[tuple[str, str], float]:
    """(parameter set, operation) -> the chip's published mean (calibrated profiles only)."""
    from trustlab.devices.tpm2.pqc_model import silicon

    return {(r.algorithm, r.operation): r.mean_ms for r in silicon.rows(profile)}


def run_bench(build: Path, profile: str, runs: int = 1, maxdur_ms: int | None = None,
              first_seed: int = 1) -> list[BenchRow]:
    """wolfTPM's bench against serve in real time, ``runs`` times (serve seeded first_seed, first_seed + 1, ...):
    per operation, total time over total operations, beside the published figure where the profile has one."""
    totals: dict[str, BenchRow] = {}
    for seed in range(first_seed, first_seed + runs):
        for op, n, sec in bench_once(build, profile, seed, maxdur_ms):
            row = totals.setdefault(op, BenchRow(op, 0, 0.0))
            row.ops, row.total_s = row.ops + n, row.total_s + sec
    refs = published(profile)
    for row in totals.values():
        family, size, *label = row.operation.split()
        row.published_ms = refs.get(BENCH_NAMES.get((family, " ".join(label)), ("", "")))
    return list(totals.values())


def print_bench(rows: list[BenchRow], profile: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"profile": profile, "bench": [asdict(r) | {"avg_ms": r.avg_ms} for r in rows]}, indent=1))
        return
    print(f"wolfTPM examples/bench/bench against trustlab serve --profile {profile} (real time)")
    print(f"{'operation':24} {'ops':>6} {'avg ms':>10} {'published':>10} {'diff':>7}")
    for r in rows:
        ref = f"{r.published_ms:10.1f} {r.avg_ms / r.published_ms - 1:+7.1%}" if r.published_ms else ""
        print(f"{r.operation:24} {r.ops:6d} {r.avg_ms:10.1f} {ref}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", help="wolfTPM build directory")
    parser.add_argument("--profile", default="sealsq-qvault-pqc-tpm-wolftpm", help="profile to serve")
    parser.add_argument("--realtime", action="store_true", help="serve in real time (default: virtual time)")
    parser.add_argument("--peer", action="store_true", help="also run everything against wolfTPM's fwtpm_server")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--bench", action="store_true",
                        help="run examples/bench/bench against serve in real time and print its averages")
    parser.add_argument("--runs", type=int, default=1, help="--bench: run the bench N times (serve seeded S..S+N-1)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="--bench: the first run's serve seed")
    parser.add_argument("--maxdur", type=int, default=None, metavar="MS",
                        help="--bench: the bench's timing window per operation in ms (bench -maxdur=; default 1 s, "
                             "15 s for key generation)")
    args = parser.parse_args(argv)
    build = Path(args.build).resolve()
    missing = [p for p in ("tests/unit.test", "examples/pqc/pqc_ctrl", "examples/keygen/keygen", "examples/bench/bench")
               if not (build / p).is_file()]
    if missing:
        parser.error(f"{build}: no {', '.join(missing)} (build wolfTPM with --enable-v185 --enable-fwtpm "
                     "--enable-swtpm)")
    if args.runs < 1 or (args.maxdur is not None and args.maxdur < 1):
        parser.error("--runs and --maxdur must be positive")
    if args.bench:
        print_bench(run_bench(build, args.profile, args.runs, args.maxdur, args.seed), args.profile, args.json)
        return 0
    ours = run_all(build, lambda: serve(args.profile, args.realtime))
    peer = run_all(build, lambda: fwtpm(build)) if args.peer else None
    if args.json:
        print(json.dumps({"ours": [asdict(r) for r in ours], "fwtpm": [asdict(r) for r in peer or []]}, indent=1))
    else:
        print(f"{'program':34} {'trustlab serve':>15} {'fwTPM':>8}  notes (ours)")
        for i, r in enumerate(ours):
            p = f"{peer[i].passed}/{peer[i].total}" if peer else "-"
            print(f"{r.name:34} {f'{r.passed}/{r.total}':>15} {p:>8}  {r.note}")
    if peer:
        return 0 if all(o.passed >= p.passed for o, p in zip(ours, peer)) else 1
    return 0 if all(r.passed == r.total for r in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
