"""``trustlab serve``: a TPM 2.0 at a real chip's speed, for unmodified TSS clients."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from trustlab.errors import TrustlabError
from trustlab.timing import registry


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve a TPM 2.0 (swtpm) through a timing proxy",
        description="Listen with swtpm's protocol (data port P, control port P+1; the data port also "
        "accepts MS-simulator TPM_SEND_COMMAND frames), forward each command to the backend and hold "
        "the response until the profile's modelled time for it has passed.",
        epilog="example: trustlab serve --profile nuvoton-npct75x-7.2.0.1-jcalgtest --port 2321 & "
        "TPM2TOOLS_TCTI=swtpm:port=2321 tpm2_getrandom 8",
    )
    p.add_argument("--profile", required=True, metavar="NAME", help="tpm2 profile name or .toml path")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=2321, help="data port P (control is P+1); 0 picks free ports")
    p.add_argument("--backend", default="swtpm", metavar="SPEC",
                   help="swtpm (start a fresh one), tcp:HOST:PORT (a swtpm-protocol TPM), device:/dev/tpmrm0")
    p.add_argument("--virtual", action="store_true", help="do not sleep; only record modelled times")
    p.add_argument("--trace", metavar="FILE.jsonl", help="append one JSON line per command")
    p.add_argument("--control", choices=("swtpm", "mssim"), default="swtpm",
                   help="protocol of port P+1: swtpm's control channel (default) or the MS simulator's "
                   "platform port (for mssim: TCTIs)")
    p.add_argument("--no-rt-priority", action="store_true",
                   help="do not ask for SCHED_FIFO for the threads that hold responses (realtime mode)")
    p.add_argument("--seed", type=int, default=0, help="seed for drawing from spreads (key generation)")
    p.add_argument("--state", metavar="DIR", default=None,
                   help="directory for the TPM's persistent state (created if missing, kept on exit); "
                   "default: a temporary directory, removed on exit")
    p.add_argument("--startup", choices=("clear", "none"), default="clear",
                   help="TPM 1.2 only: after every power-up (start, CMD_INIT) send TPM_Startup(ST_CLEAR) as a "
                   "BIOS would (default), or leave TPM_Startup to the client (none, e.g. ST_STATE after "
                   "TPM_SaveState)")
    p.set_defaults(handler=run)


def _log(message: str) -> None:
    """Backend trouble while serving goes to stderr, one line each (clients only see TPM_RC_FAILURE)."""
    print(f"trustlab serve: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from trustlab.devices.tpm2.proxy import TimingProxy

    profile = registry.load(args.profile)
    if profile.family == "tpm1.2":
        return _serve_tpm12(args, profile)
    if profile.family != "tpm2":
        raise TrustlabError(f"profile {profile.name!r} is of family {profile.family!r}; serve needs a tpm2 or "
                            f"tpm1.2 profile (see 'trustlab profiles list')")
    if not 0 <= args.port < 65535:
        raise TrustlabError(f"--port {args.port}: expected 0..65534")
    if args.state is not None or args.startup != "clear":
        raise TrustlabError("--state and --startup are supported for tpm1.2 profiles only (so far)")
    try:
        proxy = TimingProxy(profile, args.backend, virtual=args.virtual, trace=args.trace, host=args.host,
                            port=args.port, seed=args.seed, control=args.control,
                            rt_priority=not args.no_rt_priority, log=_log)
    except OSError as exc:
        raise TrustlabError(f"cannot start the proxy: {exc}") from None
    try:
        proxy.check_backend()  # before the banner: a client must never be told a dead TPM is ready
    except BaseException:
        proxy.stop()
        raise
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    from trustlab.devices.tpm2.cost import zero_profile

    lacking = [c for c in zero_profile().components if c not in profile]
    if lacking:
        print(f"trustlab serve: note: {profile.name} has no {', '.join(lacking)}; commands needing them are "
              "timed as overhead + bytes and traced as unmodelled", file=sys.stderr, flush=True)
    mode = "virtual" if args.virtual else "realtime"
    print(f"trustlab serve: {profile.name} ({mode}) on {args.host}:{proxy.port} (control {proxy.ctrl_port}), "
          f"backend {proxy.backend.describe()}", flush=True)
    tcti = proxy.mssim_tcti if args.control == "mssim" else proxy.tcti
    print(f"TPM2TOOLS_TCTI={tcti}", flush=True)
    try:
        done.wait()
    finally:
        proxy.stop()
        n = len(proxy.records)
        print(f"trustlab serve: stopped after {n} command(s), {proxy.clock.now_ms:.1f} ms modelled",
              file=sys.stderr, flush=True)
    return 0


def _serve_tpm12(args: argparse.Namespace, profile) -> int:
    """The in-process TPM 1.2 engine behind the same front end (devices/tpm12/served.py)."""
    from trustlab.devices.tpm12.served import EngineBackend, Tpm12Proxy

    if args.backend != "swtpm":
        raise TrustlabError(f"--backend {args.backend}: a tpm1.2 profile is served by trustlab's own TPM 1.2 "
                            "engine; --backend applies to tpm2 profiles")
    if not 0 <= args.port < 65535:
        raise TrustlabError(f"--port {args.port}: expected 0..65534")
    backend = EngineBackend(profile, args.state, seed=args.seed, startup=args.startup)
    try:
        proxy = Tpm12Proxy(profile, backend, virtual=args.virtual, trace=args.trace, host=args.host,
                           port=args.port, seed=args.seed, control=args.control,
                           rt_priority=not args.no_rt_priority, log=_log)
    except OSError as exc:
        backend.close()
        raise TrustlabError(f"cannot start the proxy: {exc}") from None
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    mode = "virtual" if args.virtual else "realtime"
    print(f"trustlab serve: {profile.name} ({mode}) on {args.host}:{proxy.port} (control {proxy.ctrl_port}), "
          f"backend {backend.describe()}", flush=True)
    print(f"TCSD_USE_TCP_DEVICE=1 TCSD_TCP_DEVICE_HOSTNAME={args.host} TCSD_TCP_DEVICE_PORT={proxy.port}",
          flush=True)
    try:
        done.wait()
    finally:
        proxy.stop()
        print(f"trustlab serve: stopped after {len(proxy.records)} command(s), {proxy.clock.now_ms:.1f} ms "
              "modelled", file=sys.stderr, flush=True)
    return 0
