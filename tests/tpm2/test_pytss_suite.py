"""tpm2-pytss 3.0.0's own test suite, run against `serve` (virtual, resource manager on).

The suite starts a simulator per test (``SwtpmSimulator._start``); a conftest
dropped next to it replaces that with a swtpm behind a :class:`TimingProxy`
on the port the suite picked, so every ESAPI call of the suite goes through
the proxy's front end, resource manager and control-port policy. The sdist
comes from PyPI (``pip download``, kept in ~/.cache/trustlab or
``$TRUSTLAB_PYTSS_SDIST_DIR``); without network access the test is skipped.
The full run takes a few minutes on a loaded 2-core host; set
``TRUSTLAB_PYTSS_SUITE=esapi`` to run only test_esapi.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from .conftest import needs_swtpm

pytestmark = [needs_swtpm, pytest.mark.swtpm]
VERSION = "3.0.0"
SRC = str(Path(__file__).resolve().parents[2] / "src")
MODULES = ("test_esapi.py", "test_policy.py", "test_tcti.py", "test_tsskey.py", "test_crypto.py")

CONFTEST = '''
"""Written by trustlab's tests/tpm2/test_pytss_suite.py: simulators are swtpm behind trustlab serve."""
from . import TSS2_BaseTest as base  # the module the suite's tests import (relatively)

from trustlab.serving.tpm2.backend import swtpm_backend
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import Swtpm
from trustlab.timing import registry

PROFILE = registry.load("nuvoton-npct750-wolftpm")


class Served:
    """What the suite expects of a simulator process (poll, terminate, wait, kill)."""

    def __init__(self, port):
        self.proxy = None
        tpm = Swtpm(startup=False).start()  # the suite sends TPM2_Startup itself
        try:
            self.proxy = TimingProxy(PROFILE, swtpm_backend(tpm, owned=True), virtual=True, port=port,
                                     startup="none")  # after a power cycle too: the suite starts the TPM
        except Exception:
            tpm.stop()

    def poll(self):
        return None if self.proxy is not None and self.proxy.backend.owned.alive else 1

    def terminate(self):
        if self.proxy is not None:
            self.proxy.stop()

    kill = terminate

    def wait(self, timeout=None):
        return 0


base.SwtpmSimulator._start = lambda self, port: Served(port)
'''


def _sdist(cache: Path, work: Path) -> Path:
    """The suite's test/ directory, unpacked into ``work`` from the sdist (downloaded once into ``cache``)."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"tpm2_pytss-{VERSION}.tar.gz"
    if not tarball.exists():
        try:  # build isolation fetches the sdist's build requirements (pkgconfig ...) as wheels
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "tpm2-pytss",
                            "--timeout", "15", f"tpm2-pytss=={VERSION}", "-d", str(cache)],
                           capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            pass
        if not tarball.exists():
            pytest.skip(f"tpm2-pytss {VERSION} sdist not obtainable here (offline?)")
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    return work / f"tpm2_pytss-{VERSION}" / "test"


def test_pytss_suite_passes_through_serve(tmp_path_factory):
    cache = Path(os.environ.get("TRUSTLAB_PYTSS_SDIST_DIR") or Path.home() / ".cache" / "trustlab")
    tests = _sdist(cache, tmp_path_factory.mktemp("pytss-suite"))
    (tests / "conftest.py").write_text(CONFTEST)
    only = os.environ.get("TRUSTLAB_PYTSS_SUITE")
    modules = [f"test_{only}.py"] if only else [m for m in MODULES if (tests / m).exists()]
    env = dict(os.environ, PYTHONPATH=SRC, TSS2_LOG="all+NONE")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                           "-o", "addopts=", *modules], cwd=tests, env=env, capture_output=True, text=True,
                          timeout=3600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    print(f"tpm2-pytss {VERSION} suite through serve: {summary}")  # the counts (pytest -rP shows them)
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    assert done.returncode == 0 and passed > 0, done.stdout[-4000:] + done.stderr[-2000:]
