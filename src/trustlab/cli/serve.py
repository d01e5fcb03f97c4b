"""``trustlab serve``: a TPM 2.0 at a real chip's speed, for unmodified TSS clients."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from trustlab.errors import TrustlabError
from trustlab.safe_output import check_file, path_arg
from trustlab.experiments._params import seed
from trustlab.timing import registry

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
ABANDONED_DEFAULT = 4
"""tpm2-abrmd's ``SESSION_LIST_MAX_ABANDONED_DEFAULT`` (session-list.h; no option changes it there)."""
ABANDONED_LIMIT = 16
"""A bound well below the TPM's active-session slots (libtpms: 64), so kept sessions never fill them."""


def _abandoned(text: str) -> int:
    """``--abandoned-sessions``: a whole number 0..ABANDONED_LIMIT, else a one-line error."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number 0..{ABANDONED_LIMIT}, not {text!r}") from None
    if not 0 <= n <= ABANDONED_LIMIT:
        raise argparse.ArgumentTypeError(f"expected 0..{ABANDONED_LIMIT}, not {n}")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve a TPM 2.0 (swtpm) or TPM 1.2 (trustlab's engine) through a timing proxy",
        description="Listen with swtpm's protocol (data port P, control port P+1), forward each command to "
        "the backend through a resource manager with the Linux tpmrm's rules, and hold the response until "
        "the profile's modelled time for it has passed since its last request byte arrived. swtpm: and "
        "mssim: TCTIs both work against the default (the control port tells them apart by their first frame). "
        "The TPM state is temporary unless --state is given. With a tpm1.2 profile the backend is trustlab's "
        "own TPM 1.2 engine (no resource manager; each command takes the time the engine charged), which "
        "TrouSerS tcsd reaches in its TCP device mode.",
        epilog="examples: trustlab serve --profile nuvoton-npct75x-7.2.0.1-jcalgtest --port 2321 & "
        "TPM2TOOLS_TCTI=swtpm:port=2321 tpm2_getrandom 8;  trustlab serve --profile infineon-2010 --port 2321 & "
        "TCSD_USE_TCP_DEVICE=1 TCSD_TCP_DEVICE_PORT=2321 tcsd -e -f",
    )
    p.add_argument("--profile", required=True, metavar="NAME",
                   help="tpm2 or tpm1.2 profile name or .toml path")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; the control port has no authentication)")
    p.add_argument("--port", type=int, default=2321, help="data port P (control is P+1); 0 picks free ports")
    p.add_argument("--backend", default="swtpm", metavar="SPEC",
                   help="swtpm (start a fresh one, owned by serve: should it exit, serve stops with an error, "
                   "since its volatile state is gone), tcp:HOST:PORT (a swtpm-protocol TPM serve does not own: "
                   "while it is down clients get TPM_RC_FAILURE and serving goes on until it answers again), "
                   "device:/dev/tpmrm0")
    p.add_argument("--state", metavar="DIR", type=path_arg,
                   help="keep the TPM's state (NV, persistent keys, seeds) in DIR across restarts: a new or empty "
                   "directory, or one an earlier serve kept its state in (default: a temporary directory, "
                   "deleted on exit)")
    p.add_argument("--virtual", action="store_true", help="do not sleep; only record modelled times")
    p.add_argument("--trace", metavar="FILE.jsonl", type=path_arg,
                   help="append one JSON line per command to a new or empty file or an earlier trace (never to "
                   "an input; a write error turns tracing off, said once)")
    p.add_argument("--force", action="store_true",
                   help="with --trace: replace a file that is not an earlier trace (refused without it)")
    p.add_argument("--control", choices=("auto", "swtpm", "mssim"), default="auto",
                   help="protocol of port P+1: auto (default: swtpm's control channel or the MS simulator's "
                   "platform port, told apart per connection), or force one")
    p.add_argument("--no-rm", action="store_true",
                   help="raw access: no resource manager (clients see real handles and must flush their own "
                   "objects, as with /dev/tpm0). TPM 2.0 only: a tpm1.2 profile is served without one")
    p.add_argument("--abandoned-sessions", type=_abandoned, default=None, metavar="N",
                   help="sessions a client saved itself (tpm2-tools' -S FILE) and left behind when it exited are "
                   "kept for a later process to load, at most N, the oldest flushed first (default "
                   f"{ABANDONED_DEFAULT}: tpm2-abrmd's fixed bound, which tpm2-tools scripts that hand a session "
                   "from one tool to the next rely on); 0 flushes every session of an exiting client, as the "
                   f"kernel's /dev/tpmrm0 does. At most {ABANDONED_LIMIT}: each kept session holds one of the "
                   "TPM's session slots. TPM 2.0 with the resource manager only")
    p.add_argument("--no-rt-priority", action="store_true",
                   help="do not ask for SCHED_FIFO for the thread that holds responses (realtime mode)")
    p.add_argument("--seed", type=seed, default=0, help="seed for drawing from spreads (key generation)")
    p.add_argument("--startup", choices=("clear", "none"), default="clear",
                   help="after power-up, and after every power cycle a client asks for on the control port "
                   "(CMD_INIT, the MS simulator's POWER_OFF/RESET), send TPM(2)_Startup(CLEAR) as a BIOS would "
                   "(default), or leave it to the client (none: e.g. tpm2-pytss' own tests, or TPM 1.2 ST_STATE "
                   "after TPM_SaveState)")
    p.set_defaults(handler=run)


def _log(message: str) -> None:
    """Backend trouble and refused control requests go to stderr, one line each."""
    print(f"trustlab serve: {message}", file=sys.stderr, flush=True)


def _open_backend(args: argparse.Namespace):
    """The backend spec, or for ``--state`` a swtpm on that directory (owned: stopped on exit)."""
    from trustlab.serving.swtpm import remove_stale_state

    if args.backend == "swtpm":  # only a serve that starts a swtpm tidies what killed ones left
        for stale in remove_stale_state():
            _log(f"removed {stale} (left by a process that no longer runs)")
    if args.state is None and args.startup == "clear":
        return args.backend
    if args.backend != "swtpm":
        raise TrustlabError(f"--state and --startup apply to --backend swtpm, not {args.backend!r}")
    from pathlib import Path

    from trustlab.serving.tpm2.backend import swtpm_backend
    from trustlab.serving.swtpm import Swtpm, unix_data_channel

    state = Path(args.state) if args.state else None
    unix = unix_data_channel(log=_log)
    return swtpm_backend(Swtpm(state_dir=state, startup=args.startup == "clear", unix=unix).start(), owned=True)


def run(args: argparse.Namespace) -> int:
    # Signals only set a flag (an Event.set() in a handler can deadlock against the waiting main
    # thread); the main thread polls it, so SIGTERM at any moment ends serve within ~0.1 s + cleanup.
    received: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    profile = registry.load(args.profile)
    if profile.family not in ("tpm2", "tpm1.2"):
        raise TrustlabError(f"profile {profile.name!r} is of family {profile.family!r}; serve needs a tpm2 or "
                            f"tpm1.2 profile (see 'trustlab profiles list')")
    if args.abandoned_sessions is not None and (profile.family == "tpm1.2" or args.no_rm):
        raise TrustlabError("--abandoned-sessions applies to the TPM 2.0 resource manager, not to "
                            + ("a tpm1.2 profile" if profile.family == "tpm1.2" else "--no-rm"))
    if args.no_rm and profile.family == "tpm1.2":
        raise TrustlabError("--no-rm turns off the TPM 2.0 resource manager; a tpm1.2 profile is served "
                            "without one (TPM 1.2 clients flush their own handles), so it has no effect")
    if not 0 <= args.port < 65535:
        raise TrustlabError(f"--port {args.port}: expected 0..65534")
    if args.host not in LOOPBACK_HOSTS:
        _log(f"warning: listening on {args.host}: the control port (P+1) has no authentication; anyone who "
             "can reach it can power-cycle this TPM")
    from trustlab.serving.statedir import StateDir, refuse_state_file

    inputs = [args.profile]  # a profile named by its path is an input: never written into
    if args.force and args.trace is None:
        raise TrustlabError("--force: applies only with --trace (it allows replacing a file that is not a trace)")
    replace_trace = False
    if args.trace is not None:
        check_file(args.trace, inputs, flag="--trace")
        if args.state is not None:
            refuse_state_file(args.trace, args.state, "--trace")
        replace_trace = _foreign_trace(args.trace, args.force)
    claim = StateDir(args.state, inputs) if args.state is not None else None  # refused in one line, nothing written
    proxy = None
    try:
        proxy = (_start_tpm12 if profile.family == "tpm1.2" else _start_tpm2)(args, profile, replace_trace)
        proxy.check_backend()  # before the banner: a client must never be told a dead TPM is ready
    except BaseException:
        if proxy is not None:
            proxy.stop()
        if claim is not None:
            claim.undo()
        raise
    try:
        mode = "virtual" if args.virtual else "realtime"
        state = f"state in {args.state}" if args.state else "temporary state"
        if profile.family == "tpm1.2":
            print(f"trustlab serve: {profile.name} ({mode}) on {args.host}:{proxy.port} "
                  f"(control {proxy.ctrl_port}), backend {proxy.backend.describe()}", flush=True)
            print(f"TCSD_USE_TCP_DEVICE=1 TCSD_TCP_DEVICE_HOSTNAME={args.host} TCSD_TCP_DEVICE_PORT={proxy.port}",
                  flush=True)
        else:
            _note_lacking(profile)
            kept = ABANDONED_DEFAULT if args.abandoned_sessions is None else args.abandoned_sessions
            rm = "raw, no resource manager" if args.no_rm else (
                f"resource manager on, up to {kept} abandoned session(s) kept" if kept
                else "resource manager on, every session of an exiting client flushed")
            print(f"trustlab serve: {profile.name} ({mode}, {rm}, {state}) on {args.host}:{proxy.port} "
                  f"(control {proxy.ctrl_port}), backend {proxy.backend.describe()}", flush=True)
            print(f"TPM2TOOLS_TCTI={proxy.tcti}", flush=True)
            print(f"trustlab serve: MS-simulator clients: TPM2TOOLS_TCTI={proxy.mssim_tcti}", flush=True)
        lost = None
        while not received and proxy.serving and lost is None:
            time.sleep(0.05)
            lost = proxy.backend_lost
        if lost is not None:  # an owned swtpm never comes back; restarting it would lose the TPM's volatile state
            _log(f"error: {lost}; stopping (commands in flight are answered with TPM_RC_FAILURE)")
            return 1
        if not received:  # the serving thread died: never leave a dead open port
            _log(f"error: {proxy.failure}; stopped")
            return 1
    finally:
        proxy.stop()
        print(f"trustlab serve: stopped after {proxy.summary()}", file=sys.stderr, flush=True)
    return 0


def _foreign_trace(path, force: bool) -> bool:
    """Is ``path`` a file other than an earlier trace (to replace: allowed with ``--force`` only)?"""
    from trustlab.limits import shown
    from trustlab.serving.trace import foreign_trace_file

    if os.path.islink(path):  # dangling or not: the link is replaced only with --force, its target never written
        if not force:
            raise TrustlabError(f"--trace {shown(path)}: is a symbolic link; pass --force to replace the link "
                                "(its target is left alone), or choose a new name")
        os.unlink(path)
        return False
    try:
        foreign = foreign_trace_file(path)
    except OSError as exc:
        raise TrustlabError(f"--trace {shown(path)}: cannot read ({exc.strerror or exc})") from None
    if foreign and not force:
        raise TrustlabError(f"--trace {shown(path)}: exists and is not an earlier trace (its first line is not a "
                            "trace record); pass --force to replace it, or choose a new name")
    return foreign


def _note_lacking(profile) -> None:
    from trustlab.devices.tpm2.cost import zero_profile

    lacking = [c for c in zero_profile().components if c not in profile]
    if lacking:
        _log(f"note: {profile.name} has no {', '.join(lacking)}; commands needing them are "
             "timed as overhead + bytes and traced as unmodelled")


def _start_tpm2(args: argparse.Namespace, profile, replace_trace: bool = False):
    from trustlab.serving.proxy import TimingProxy

    backend = _open_backend(args)
    try:
        return TimingProxy(profile, backend, virtual=args.virtual, trace=args.trace, host=args.host,
                           port=args.port, seed=args.seed, control=args.control, rm=not args.no_rm,
                           rt_priority=not args.no_rt_priority, log=_log, startup=args.startup, keep_records=0,
                           abandoned_sessions=args.abandoned_sessions, replace_trace=replace_trace)
    except BaseException as exc:
        if not isinstance(backend, str):
            backend.close()
        if isinstance(exc, OSError):
            raise TrustlabError(f"cannot start the proxy: {exc}") from None
        raise


def _start_tpm12(args: argparse.Namespace, profile, replace_trace: bool = False):
    """The in-process TPM 1.2 engine behind the same front end (serving/tpm12/engine_backend.py)."""
    from trustlab.serving.tpm12.engine_backend import EngineBackend
    from trustlab.serving.proxy import TimingProxy

    if args.backend != "swtpm":
        raise TrustlabError(f"--backend {args.backend}: a tpm1.2 profile is served by trustlab's own TPM 1.2 "
                            "engine; --backend applies to tpm2 profiles")
    if args.control == "mssim":
        raise TrustlabError("--control mssim: the MS simulator's platform protocol is TPM 2.0 only")
    backend = EngineBackend(profile, args.state, seed=args.seed, startup=args.startup)
    try:
        return TimingProxy(profile, backend, control="swtpm", virtual=args.virtual, trace=args.trace,
                           host=args.host, port=args.port, seed=args.seed, rt_priority=not args.no_rt_priority,
                           log=_log, startup=args.startup, keep_records=0, replace_trace=replace_trace)
    except BaseException as exc:
        backend.close()
        if isinstance(exc, OSError):
            raise TrustlabError(f"cannot start the proxy: {exc}") from None
        raise
