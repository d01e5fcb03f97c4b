#!/usr/bin/env python3
"""The TCG TSS 1.2 testsuite (IBM/TrouSerS, github.com/srajiv/testsuite) on libtpms and on `trustlab serve`.

About 800 C programs under ``tcg/``, each one Tspi_* scenario written by the
TrouSerS authors, each exiting 0 on PASS, 126 when it does not apply to the
TSS version, 6 when TrouSerS does not implement the API, anything else on
FAIL (``tsstests.sh``'s rules). They run with ``-v 1.2`` through TrouSerS'
tcsd against

* libtpms' TPM 1.2 (``swtpm socket`` without ``--tpm2``), and
* ``trustlab serve --profile infineon-2010 --virtual --startup none``,

both booted alike as a BIOS would (TPM_Startup(ST_CLEAR), physical presence
command-enable and present; libtpms first gets an EK as ``swtpm_setup``
would) by the machinery of ``tools/tpm12_client_matrix.py`` and
``tests/tpm12/tss_clients.py`` (the logging relay, a tcsd on its own port with
its own system_ps_file). Ownership is taken the suite's own way, by its
``init/Tspi_TPM_TakeOwnership01`` with ``TESTSUITE_OWNER_SECRET`` and
``TESTSUITE_SRK_SECRET`` set, as its README says.

State: one fresh TPM per test directory and backend, the directory's tests in
name order on it (what ``tsstests.sh`` does on one machine), so both TPMs see
the same sequence; ``--fresh`` gives every test its own fresh, owned TPM
instead (slower; for confirming a difference without its predecessors).

A test is compared by its outcome (pass/fail/na/notimpl/crash/timeout) and
by the (ordinal, return code) sequence of the frames it caused. Classes:
``ours-fails`` (libtpms passes, trustlab does not: our defect to find),
``ours-passes`` (the reverse), ``both-fail`` (a suite/TSS limitation, or a
shared one), ``frames`` (same outcome, different TPM answers on the way).

Building the suite (outside the repository; OpenSSL 3 needs four small
source edits, done by perl below)::

    fetch github:srajiv/testsuite   # the team's fetch tool -> /work/.mirror/srajiv+testsuite/repo/.git
    mkdir -p B && git --git-dir=/work/.mirror/srajiv+testsuite/repo/.git archive HEAD | tar -x -C B
    apt-get install -y libtspi-dev
    cd B/tcg && perl -0pi -e 's/BN_bn2bin\\(rsa->(\\w)\\b/BN_bn2bin(RSA_get0_$1(rsa)/g;
        s/rsa->n = BN_bin2bn\\(([^;]*), rsa->n\\);/BIGNUM *tl_n = BN_bin2bn($1, NULL);/g;
        s/rsa->e = BN_bin2bn\\(([^;]*), rsa->e\\);/BIGNUM *tl_e = BN_bin2bn($1, NULL); RSA_set0_key(rsa, tl_n, tl_e, NULL);/g;
        s/rsa->n == NULL \\|\\| rsa->e == NULL/tl_n == NULL || tl_e == NULL/g;
        s/EVP_CIPHER_CTX ctx;/EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();/g; s/\\(&ctx\\b/(ctx/g' \\
        common/common.c key/Tspi_Key_WrapKey0*.c tpm/Tspi_TPM_CollateIdentityRequest01.c \\
        transport/Tspi_TPM_CollateIdentityRequest-trans0*.c
    for d in common */; do CFLAGS="-w -fcommon" nice make -k -C $d LIBS="../common/common.o -ltspi -lcrypto"; done

Running (root: tcsd starts as root and drops to tss)::

    PYTHONPATH=src:. python tools/tss12_testsuite.py B/tcg [--only context --only tpm] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "tools")]

import tpm12_client_matrix as M  # noqa: E402  (the backends and the BIOS boot are shared)
from tests.tpm12 import tss_clients as H  # noqa: E402  (the relay and tcsd)

# tsstests.sh runs every directory with a Makefile but common/ and highlevel/ (init/ has a lower-case
# makefile: its tests are interactive, e.g. TempDeactivated, RevokeEndorsementKey)
DEFAULT_DIRS = ("cmk", "context", "data", "delegation", "hash", "key", "nv", "pcrcomposite", "policy", "tpm",
                "transport", "tspi")
SUBSET = ("context", "tpm", "key", "hash", "pcrcomposite", "data", "nv", "policy")
OWNER_SECRET, SRK_SECRET = "tss12 owner", "tss12 srk"
NA, NOTIMPL = 126, 6


def outcome(code: int | None) -> str:
    """tsstests.sh's reading of an exit status (None: killed by our timeout)."""
    if code is None:
        return "timeout"
    if code == 0:
        return "pass"
    if code == NA:
        return "na"
    if code == NOTIMPL:
        return "notimpl"
    if code < 0:  # a signal (tsstests.sh also counts exit(-1), 255, as "segfaulted"; here that is a fail)
        return "crash"
    return "fail"


@dataclass
class Result:
    test: str
    code: int | None
    outcome: str
    frames: list[str]
    output: str = ""
    seconds: float = 0.0
    wire: list[tuple[str, str]] = field(default_factory=list, repr=False)  # (request, response) hex




@dataclass
class Compared:
    directory: str
    test: str
    libtpms: Result
    ours: Result
    kind: str = field(init=False)
    at: dict = field(init=False)  # the first frame whose (ordinal, rc) differs, both sides in hex

    def __post_init__(self) -> None:
        self.at = {}
        for i, (x, y) in enumerate(zip(self.libtpms.frames, self.ours.frames)):
            if x != y:
                self.at = {"index": i, "libtpms": self.libtpms.wire[i], "ours": self.ours.wire[i]}
                break
        a, b = self.ours.outcome, self.libtpms.outcome
        if a != b:
            self.kind = "ours-fails" if b == "pass" else "ours-passes" if a == "pass" else "outcome"
        elif a != "pass" and a not in ("na", "notimpl"):
            self.kind = "both-fail" if self.ours.frames == self.libtpms.frames else "both-fail+frames"
        elif self.ours.frames != self.libtpms.frames:
            self.kind = "frames"
        else:
            self.kind = "same"


def _env(tcsd: H.Tcsd) -> dict[str, str]:
    return {**os.environ, "TSS_TCSD_PORT": str(tcsd.port), "TSS_TCSD_HOSTNAME": "127.0.0.1",
            "TESTSUITE_OWNER_SECRET": OWNER_SECRET, "TESTSUITE_SRK_SECRET": SRK_SECRET,
            "TESTSUITE_WRONG_OWNER_SECRET": "not the owner", "TESTSUITE_OPERATOR_SECRET": "tss12 operator"}


def _settle(log: H.FrameLog, quiet: float = 0.05, limit: float = 2.0) -> None:
    """Wait until the relay has seen no frame for ``quiet`` seconds: tcsd flushes a closed context's
    sessions and keys after the program exits, and those frames belong to this test, not the next."""
    deadline = time.monotonic() + limit
    seen = -1
    while len(log.frames) != seen and time.monotonic() < deadline:
        seen = len(log.frames)
        time.sleep(quiet)


def run_test(binary: Path, tcsd: H.Tcsd, log: H.FrameLog, timeout: float) -> Result:
    """One program with ``-v 1.2``; a timeout kills its whole process group."""
    before = len(log.frames)
    start = time.monotonic()
    proc = subprocess.Popen([str(binary), "-v", "1.2"], env=_env(tcsd), cwd=tcsd.dir, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    _settle(log)
    caused = log.frames[before:]
    text = out.decode(errors="replace")
    return Result(binary.name, code, outcome(code), [f.label() for f in caused], text[-2000:],
                  round(time.monotonic() - start, 2), [(f.request.hex(), f.response.hex()) for f in caused])


class Bench:
    """One backend booted like a BIOS, the relay, tcsd, and (``owned``) an owned TPM (the suite's
    TakeOwnership01); a failed start stops whatever it started."""

    def __init__(self, backend, build: Path, workdir: Path, owned: bool = True) -> None:
        self.backend, self.build, self.dir, self.owned = backend, build, workdir, owned
        self.log: H.FrameLog | None = None
        self.tcsd: H.Tcsd | None = None

    def __enter__(self) -> "Bench":
        self.dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        self.backend.start()
        rcs = M.send(self.backend.port, [M.startup(M.ST_CLEAR)])
        rcs += M.send(self.backend.port, self.backend.first_frames())
        rcs += M.send(self.backend.port, [H.pp_frame(H.PP_CMD_ENABLE), H.pp_frame(H.PP_PRESENT)])
        if any(rcs):
            raise RuntimeError(f"{self.backend.name}: boot frames answered {[hex(r) for r in rcs]}")
        self.log = H.FrameLog(("127.0.0.1", self.backend.port))
        self.tcsd = H.Tcsd(self.log.port, self.dir).start()
        if not self.owned:
            return
        owned = run_test(self.build / "init" / "Tspi_TPM_TakeOwnership01", self.tcsd, self.log, 300)
        if owned.outcome != "pass":
            raise RuntimeError(f"{self.backend.name}: TakeOwnership01 {owned.outcome}: {owned.output[-500:]}")

    def run(self, binary: Path, timeout: float) -> Result:
        assert self.tcsd is not None and self.log is not None
        return run_test(binary, self.tcsd, self.log, timeout)

    def __exit__(self, *exc) -> None:
        if self.tcsd is not None:
            self.tcsd.stop()
            self.tcsd = None
        if self.log is not None:
            self.log.close()
            self.log = None
        self.backend.stop()


def tests_in(build: Path, directory: str, pattern: str | None) -> list[Path]:
    d = build / directory
    names = sorted(p.stem for p in d.glob("*.c"))
    return [d / n for n in names if (d / n).is_file() and (pattern is None or pattern in n)]


def run_directory(build: Path, directory: str, backend_class, work: Path, timeout: float, fresh: bool,
                  pattern: str | None) -> list[Result]:
    """init/'s tests each get a fresh TPM (they take ownership, deactivate, revoke the EK), unowned for
    the TakeOwnership tests; elsewhere one TPM per directory unless ``fresh``."""
    tests = tests_in(build, directory, pattern)
    base = work / directory / backend_class.__name__.lower()
    if not fresh and directory != "init":
        with Bench(backend_class(base), build, base) as bench:
            return [bench.run(t, timeout) for t in tests]
    results = []
    for t in tests:
        d = base / t.name
        with Bench(backend_class(d), build, d, owned=not (directory == "init" and "TakeOwnership" in t.name)) as b:
            results.append(b.run(t, timeout))
    return results


def compare_directory(build: Path, directory: str, work: Path, timeout: float, fresh: bool,
                      pattern: str | None, jobs: int) -> list[Compared]:
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, 2))) as pool:
        theirs_f = pool.submit(run_directory, build, directory, M.Libtpms, work, timeout, fresh, pattern)
        ours_f = pool.submit(run_directory, build, directory, M.Served, work, timeout, fresh, pattern)
        theirs, ours = theirs_f.result(), ours_f.result()
    return [Compared(directory, a.test, a, b) for a, b in zip(theirs, ours)]


def counts(rows: list[Compared], side: str) -> dict[str, int]:
    c = {k: 0 for k in ("pass", "fail", "timeout", "crash", "na", "notimpl")}
    for r in rows:
        c[getattr(r, side).outcome] += 1
    return c


def table(by_dir: dict[str, list[Compared]]) -> str:
    head = ("| directory | tests | libtpms pass/fail/timeout | trustlab pass/fail/timeout | outcome differs "
            "| ours-fails | frames differ |")
    rows = [head, "|---|---|---|---|---|---|---|"]
    every: list[Compared] = []
    for name, rs in [*by_dir.items(), ("TOTAL", None)]:
        rs = every if rs is None else rs
        if name != "TOTAL":
            every += rs
        a, b = counts(rs, "libtpms"), counts(rs, "ours")
        fa = a["fail"] + a["crash"]
        fb = b["fail"] + b["crash"]
        differ = sum(r.libtpms.outcome != r.ours.outcome for r in rs)
        mine = sum(r.kind == "ours-fails" for r in rs)
        frames = sum(r.libtpms.frames != r.ours.frames for r in rs)
        rows.append(f"| {name} | {len(rs)} | {a['pass']}/{fa}/{a['timeout']} | {b['pass']}/{fb}/{b['timeout']} "
                    f"| {differ} | {mine} | {frames} |")
    return "\n".join(rows)


def first_frame_difference(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"frame {i}: trustlab {y} vs libtpms {x}"
    if len(a) != len(b):
        return f"{len(b)} frames on trustlab vs {len(a)} on libtpms"
    return "frames equal"


def _row(r: Compared) -> dict:
    """A test for --json: both sides' outcome, output, frame labels (and bytes, where they differ), and
    the first differing frame."""
    side = {"wire"} if r.kind == "same" else set()  # every frame's bytes where the TPMs differ
    return {"directory": r.directory, "test": r.test, "kind": r.kind, "first_difference": r.at,
            "libtpms": {k: v for k, v in asdict(r.libtpms).items() if k not in side},
            "ours": {k: v for k, v in asdict(r.ours).items() if k not in side}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path, help="the built testsuite's tcg/ directory")
    ap.add_argument("--only", action="append", metavar="DIR", help="run only this directory (repeatable); "
                    f"default: {' '.join(DEFAULT_DIRS)}; 'subset' is {' '.join(SUBSET)}")
    ap.add_argument("--test", metavar="TEXT", help="run only the tests whose name contains TEXT")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test (default 120)")
    ap.add_argument("--fresh", action="store_true", help="a fresh owned TPM for every test, not per directory")
    ap.add_argument("--jobs", type=int, default=2, help="run libtpms and trustlab side by side (2) or in turn (1)")
    ap.add_argument("--json", type=Path, help="write every test's outcome and frames on both TPMs here")
    ap.add_argument("-v", action="store_true", help="print every test, not only the differing ones")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)
    build = args.build.resolve()
    if not (build / "init" / "Tspi_TPM_TakeOwnership01").is_file():
        print(f"tss12_testsuite: {build}: no init/Tspi_TPM_TakeOwnership01 (give the built tcg/ directory)",
              file=sys.stderr)
        return 2
    why = H.missing()
    if why:
        print(f"tss12_testsuite: {why}", file=sys.stderr)
        return 2
    dirs: list[str] = []
    for d in args.only or DEFAULT_DIRS:
        for name in (SUBSET if d == "subset" else (d,)):
            if not (build / name).is_dir():
                print(f"tss12_testsuite: --only {name}: no such directory in {build}", file=sys.stderr)
                return 2
            dirs.append(name)
    work = Path(tempfile.mkdtemp(prefix="trustlab-tss12-"))
    work.chmod(0o755)
    by_dir: dict[str, list[Compared]] = {}
    try:
        for d in dirs:
            try:
                rows = compare_directory(build, d, work, args.timeout, args.fresh, args.test, args.jobs)
            except (RuntimeError, AssertionError, OSError) as e:  # a TPM or tcsd that would not start
                print(f"tss12_testsuite: {d}: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                      file=sys.stderr)
                return 1
            by_dir[d] = rows
            for r in rows:
                if r.kind != "same" or args.v:
                    print(f"[{d}] {r.test}: {r.kind}: trustlab {r.ours.outcome} ({r.ours.code}), libtpms "
                          f"{r.libtpms.outcome} ({r.libtpms.code}); "
                          f"{first_frame_difference(r.libtpms.frames, r.ours.frames)}")
            a, b = counts(rows, "libtpms"), counts(rows, "ours")
            print(f"== {d}: {len(rows)} tests, libtpms pass {a['pass']}, trustlab pass {b['pass']}", flush=True)
        print(table(by_dir))
        if args.json:
            args.json.write_text(json.dumps({d: [_row(r) for r in rs]
                                             for d, rs in by_dir.items()}, indent=1))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if any(r.kind == "ours-fails" for rs in by_dir.values() for r in rs) else 0


if __name__ == "__main__":
    sys.exit(main())
