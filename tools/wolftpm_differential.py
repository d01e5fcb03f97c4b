"""Send the same 1.85 command frames to wolfTPM's fwTPM and to ``trustlab serve``; compare every answer.

    .venv/bin/python tools/wolftpm_differential.py WOLFTPM_BUILD [--profile NAME] [--json] [--record FILE]

WOLFTPM_BUILD is a wolfTPM tree built (outside this repository) with
``./configure --enable-v185 --enable-fwtpm --enable-swtpm`` against a wolfSSL
with ML-DSA and ML-KEM; its ``src/fwtpm/fwtpm_server`` is started here on free
ports with fresh NV (in a temporary directory), and ours is a fresh swtpm
behind the timing proxy (virtual time). ``--fwtpm HOST:PORT`` uses an
fwTPM that is already running instead (MS-simulator protocol).

The scenarios, the shapes compared and the known differences are
:mod:`trustlab.devices.tpm2.pqc.peer_check`. Exit status 0 when every step
agrees or differs for a known reason, 1 when a difference is unexplained.
``--record FILE`` writes the fwTPM's steps (no wolfTPM code, only what it
answered), which ``tests/tpm2/test_pqc_peer_check.py`` checks ours against.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trustlab.devices.tpm2.pqc import peer_check
from trustlab.devices.tpm2.pqc.client import SocketTransport, open_transport
from trustlab.serving.proxy import timed_swtpm
from trustlab.errors import TrustlabError


def free_port_pair() -> int:
    """A port P with P+1 also free (fwtpm_server's command and platform ports)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                    return port
                except OSError:
                    continue
    raise TrustlabError("no free pair of adjacent ports for fwtpm_server")


def start_fwtpm(build: Path, workdir: Path) -> tuple[subprocess.Popen, int]:
    server = build / "src" / "fwtpm" / "fwtpm_server"
    if not server.is_file():
        raise TrustlabError(f"{server}: not found; build wolfTPM with --enable-v185 --enable-fwtpm --enable-swtpm")
    port = free_port_pair()
    proc = subprocess.Popen([str(server), "--clear", "--port", str(port), "--platform-port", str(port + 1)],
                            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                raise TrustlabError(f"fwtpm_server exited with status {proc.returncode}") from None
            time.sleep(0.05)
    proc.kill()
    raise TrustlabError("fwtpm_server did not listen within 5 s")


def run_peer(args: argparse.Namespace) -> list[peer_check.Step]:
    if args.fwtpm:
        host, _, port = args.fwtpm.rpartition(":")
        return peer_check.run(lambda: SocketTransport(host or "127.0.0.1", int(port), mssim=True).transact)
    with tempfile.TemporaryDirectory(prefix="fwtpm-") as tmp:
        proc, port = start_fwtpm(Path(args.build), Path(tmp))
        try:
            return peer_check.run(lambda: SocketTransport("127.0.0.1", port, mssim=True).transact)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def run_ours(profile: str) -> list[peer_check.Step]:
    with timed_swtpm(profile, virtual=True) as proxy:
        return peer_check.run(lambda: open_transport(proxy.tcti).transact)


def _rc(rc: int | None) -> str:
    return "-" if rc is None else f"{rc:#05x}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", help="wolfTPM build directory (holds src/fwtpm/fwtpm_server)")
    parser.add_argument("--fwtpm", metavar="HOST:PORT", help="a running fwtpm_server instead of starting one")
    parser.add_argument("--profile", default="sealsq-qvault-pqc-tpm-wolftpm", help="trustlab profile to serve")
    parser.add_argument("--json", action="store_true", help="print the rows and the tally as JSON")
    parser.add_argument("--record", metavar="FILE", help="write the fwTPM's steps to FILE (JSON)")
    parser.add_argument("--peer-version", default="", help="wolfTPM commit / wolfSSL version, kept in --record")
    args = parser.parse_args(argv)
    if not args.build and not args.fwtpm:
        parser.error("give the wolfTPM build directory or --fwtpm HOST:PORT")
    try:
        peer = run_peer(args)
        ours = run_ours(args.profile)
    except TrustlabError as exc:
        print(f"wolftpm_differential: {exc}", file=sys.stderr)
        return 2
    rows = peer_check.compare(ours, peer)
    tally = peer_check.tally(rows)
    if args.record:
        steps = ",\n".join("  " + json.dumps(step) for step in peer_check.steps_to_json(peer))
        head = json.dumps({"peer": "wolfTPM fwTPM (src/fwtpm/fwtpm_server)", "version": args.peer_version})
        Path(args.record).write_text(head[:-1] + ', "steps": [\n' + steps + "\n]}\n")  # one step a line
    if args.json:
        print(json.dumps({"tally": tally, "rows": [vars(r) for r in rows]}, indent=1))
    else:
        for r in rows:
            mark = "agree" if r.agree else ("known" if r.known else "DIFFER")
            print(f"{mark:6} {r.scenario:22} {r.label:55} ours {_rc(r.ours_rc)}  fwTPM {_rc(r.peer_rc)}")
            if not r.agree:
                print(f"       ours:  {r.ours}\n       fwTPM: {r.peer}")
                if r.known:
                    print(f"       why:   {r.known}")
        print(f"\n{tally['compared']} steps compared: {tally['agree']} agree, {tally['known']} differ for a known "
              f"reason, {tally['unexplained']} unexplained")
    return 1 if tally["unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
