"""Shared fixtures for the lab bench tests: headless Chromium, a counting experiment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
COUNTING = HERE / "counting_experiment.py"

# Register the counting experiment here and in every worker process these tests start.
from trustlab.experiments import registry as _registry  # noqa: E402

_mods = [m for m in os.environ.get(_registry.EXTRA_MODULES_ENV, "").split(os.pathsep) if m]
if str(COUNTING) not in _mods:
    os.environ[_registry.EXTRA_MODULES_ENV] = os.pathsep.join(_mods + [str(COUNTING)])
if _registry._LOADED:
    _registry._load_extra_modules()

_PROBE = """
<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                   .map(function (i) { return i.getAttribute('src').slice(0, 80); });
  var out = document.createElement('pre');
  out.id = 'probe-result';
  out.textContent = JSON.stringify({images: imgs.length, broken: broken});
  document.body.appendChild(out);
});
</script>
"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture
def image_check():
    """Load an HTML file in headless Chromium and return {'images': n, 'broken': [...]}.

    The probe runs in a copy of the page in the same directory, so relative
    image paths resolve exactly as they do for the real page.
    """
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium); cannot render the report")

    def check(index: Path) -> dict:
        probe = index.with_name("_probe_" + index.name)
        probe.write_text(index.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                         encoding="utf-8")
        profile = tempfile.mkdtemp(prefix="h9-chromium-")
        try:
            proc = subprocess.run(
                [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
                 probe.resolve().as_uri()],
                capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
            probe.unlink(missing_ok=True)
        m = re.search(r'<pre id="probe-result">(.*?)</pre>', proc.stdout, re.S)
        assert m, f"chromium did not render the page (rc={proc.returncode}): {proc.stderr[-500:]}"
        return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))

    return check
