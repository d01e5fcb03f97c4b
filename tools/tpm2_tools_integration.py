"""Run tpm2-tools' own integration suite (test/integration/tests/*.sh) against ``trustlab serve``.

The suite is not ours and is never committed: fetch tpm2-tools, take its tag's
``test/`` directory (and ``tools/``, ``man/``: toggle_options.sh checks the option docs), and pass the
directory that holds them::

    git --git-dir=/work/.mirror/tpm2-software+tpm2-tools/repo archive 5.4 test tools man | tar -x -C DIR
    python tools/tpm2_tools_integration.py DIR [--profile NAME] [--only getcap,flushcontext] [--jobs 2]
        [--serve-arg=--abandoned-sessions=0]

Each script gets a fresh ``trustlab serve --virtual --port 0`` (temporary state),
reached as ``TPM2TOOLS_TEST_TCTI=swtpm:...`` exactly as the suite's own harness
reaches a simulator; the harness's ``tpm2 startup -c`` and ``tpm2 clear`` run as
usual. Exit code 77 is automake's "skip". Prints one line per script and the
counts; exits 1 if any script failed. The installed tpm2-tools must be the
tag's version (``tpm2 --version``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TCTI = re.compile(r"TPM2TOOLS_TCTI=(swtpm:\S+)")


def start_serve(profile: str, log: Path, extra: list[str]) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", profile, "--virtual",
                             "--port", "0", *extra], stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        match = TCTI.search(line)
        if match:
            return proc, match.group(1)
    proc.wait()
    raise RuntimeError(f"serve did not start: {log.read_text()[-500:]}")


def run_one(script: Path, top: Path, profile: str, work: Path, extra: list[str]) -> tuple[str, str]:
    name = script.stem
    serve, tcti = start_serve(profile, work / f"{name}.serve.log", extra)
    try:
        env = dict(os.environ, TPM2TOOLS_TEST_TCTI=tcti, srcdir=str(top), abs_srcdir=str(top),
                   PATH=f"{top / 'test/integration'}{os.pathsep}{os.environ['PATH']}", TSS2_LOG="all+NONE",
                   PYTHON=sys.executable if _has_yaml(sys.executable) else "python3")
        with (work / f"{name}.log").open("w") as out:
            try:
                rc = subprocess.run(["bash", str(script)], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    timeout=600).returncode
            except subprocess.TimeoutExpired:
                rc = -1
    finally:
        serve.terminate()
        try:
            serve.wait(10)
        except subprocess.TimeoutExpired:
            serve.kill()
    return name, "pass" if rc == 0 else "skip" if rc == 77 else f"FAIL ({rc})"


def _has_yaml(python: str) -> bool:
    return subprocess.run([python, "-c", "import yaml"], capture_output=True).returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("top", type=Path, help="directory holding tpm2-tools' test/ (from its tag)")
    ap.add_argument("--profile", default="nuvoton-npct750-wolftpm")
    ap.add_argument("--only", default="", help="comma-separated script names (without .sh)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--work", type=Path, help="where logs go (default: a temporary directory, kept)")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for serve, repeatable (e.g. --serve-arg=--abandoned-sessions=0)")
    args = ap.parse_args()
    tests = sorted((args.top / "test/integration/tests").glob("*.sh"))
    if args.only:
        wanted = set(args.only.split(","))
        tests = [t for t in tests if t.stem in wanted]
    if not tests:
        print(f"no scripts under {args.top}/test/integration/tests", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="tpm2-tools-it-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    counts = {"pass": 0, "skip": 0, "fail": 0}
    with ThreadPoolExecutor(args.jobs) as pool:
        for name, verdict in pool.map(lambda t: run_one(t, args.top, args.profile, work, args.serve_arg), tests):
            counts["fail" if verdict.startswith("FAIL") else verdict] += 1
            print(f"{verdict:10} {name}", flush=True)
    print(f"tpm2-tools integration: {counts['pass']} pass, {counts['fail']} fail, {counts['skip']} skip "
          f"of {len(tests)} ({time.monotonic() - started:.0f} s; logs in {work})")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
