"""A test-only experiment that logs every execution, so tests can count recomputation.

Loaded through $TRUSTLAB_EXPERIMENT_MODULES (see conftest), which also reaches
joblib and Dask worker processes.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from trustlab.errors import TrustlabError
from trustlab.experiments.registry import Result, experiment


@experiment("lab-counting", help="test experiment: logs each execution; value = x^2 + y + noise(seed)")
class Counting:
    flagship = [["--x", "2"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--x", type=int, default=0)
        parser.add_argument("--y", type=float, default=0.0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--log", default=None)
        parser.add_argument("--sleep", type=float, default=0.0)
        parser.add_argument("--fail-on", type=int, default=None)
        parser.add_argument("--user-error-on", type=int, default=None)
        parser.add_argument("--violate-on", type=int, default=None)

    def check(self, args: argparse.Namespace) -> None:
        """A check of two parameters together: only a whole point shows it (a sweep's dry run must)."""
        if args.x < 0 and args.y < 0:
            raise TrustlabError(f"--x {args.x} with --y {args.y}: not both negative")

    def run(self, args: argparse.Namespace) -> Result:
        if args.log:
            line = json.dumps({"x": args.x, "y": args.y, "seed": args.seed, "pid": os.getpid()}) + "\n"
            fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        if args.sleep:
            time.sleep(args.sleep)
        if args.fail_on is not None and args.x == args.fail_on:
            raise RuntimeError(f"deliberate failure at x={args.x}")
        if args.user_error_on is not None and args.x == args.user_error_on:
            raise TrustlabError(f"--x {args.x}: deliberately refused")
        noise = float(np.random.default_rng(args.seed).random())
        value = args.x ** 2 + args.y + noise
        return Result(experiment="lab-counting", params={"x": args.x, "y": args.y, "seed": args.seed},
                      data={"x": args.x, "y": args.y, "seed": args.seed, "value": value},
                      text=f"value = {value}",
                      violations=([f"1 deliberate violation at x={args.x}"]
                                  if args.violate_on is not None and args.x == args.violate_on else []),
                      plots=[{"kind": "line", "title": "x^2", "xlabel": "x", "ylabel": "y",
                              "series": [{"label": "x^2", "x": [0, 1, 2], "y": [0, 1, 4]}]}])


@experiment("lab-broken", help="test experiment: its flagship runs fail (an exception, a hang)")
class Broken:
    # Only the flagship argv fail: run with defaults it succeeds, so a test elsewhere that
    # runs every registered experiment in the same process is not tripped by this one.
    flagship = [["--fail"], ["--hang"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--fail", action="store_true")
        parser.add_argument("--hang", action="store_true")

    def run(self, args: argparse.Namespace) -> Result:
        if args.hang:
            time.sleep(120)
        if args.fail:
            raise RuntimeError("this study is broken on purpose")
        return Result(experiment="lab-broken", params={}, data={"ok": True})


@experiment("lab-swtpm", help="test experiment: starts its own swtpm, asks it for random bytes")
class WithSwtpm:
    flagship = [[]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--point", type=int, default=0)

    def run(self, args: argparse.Namespace) -> Result:
        import struct

        from trustlab.devices.tpm2 import wire
        from trustlab.serving.swtpm import Swtpm

        with Swtpm() as tpm:
            rsp = tpm.send(wire.build_command(0x0000017B, struct.pack(">H", 16)))  # TPM2_GetRandom
            info = {"point": args.point, "swtpm_pid": tpm.proc.pid, "port": tpm.port,
                    "state_dir": str(tpm.state_dir), "rc": wire.response_code(rsp), "random_len": len(rsp) - 12}
        return Result(experiment="lab-swtpm", params={"point": args.point}, data=info)


@experiment("lab-violating", help="test experiment: its flagship run reports a violated safety property")
class Violating:
    flagship = [["--violate"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--violate", action="store_true")

    def run(self, args: argparse.Namespace) -> Result:
        lines = ["3 torn writes", "1 lost update"] if args.violate else []
        return Result(experiment="lab-violating", params={"violate": args.violate},
                      data={"violate": args.violate}, violations=lines)
