"""Differential conformance: the same TPM 1.2 commands to our engine and to libtpms.

Every case of :mod:`.conformance_cases` runs on both TPMs in order; for each,
return code, response length and the non-random fields are compared. The
agreement table is printed and saved (``$TRUSTLAB_CONFORMANCE_OUT`` or the
test's temporary directory); every case where the two disagree must be listed,
with its reason, in ``src/trustlab/devices/tpm12/README.md``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from collections import Counter
from pathlib import Path

import pytest

from trustlab.devices.tpm12.primitives import KeyPool

from trustlab.devices.tpm12 import constants as C

from .conformance_cases import CASES, OWNER, cap, frame, quiet, rc_of
from .differential import pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

README = Path(__file__).resolve().parents[2] / "src/trustlab/devices/tpm12/README.md"
MIN_AGREEMENT = 0.95


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    ours, libtpms = pair(KeyPool())
    rows = []
    try:
        for case in CASES:
            outcome = []
            for side in (ours, libtpms):
                side.last = (b"", b"")
                try:
                    case.run(side)
                except Exception as e:  # noqa: BLE001 - a host-side failure is judged by the last exchange
                    side.ctx.setdefault("errors", []).append((case.name, repr(e)))
                outcome.append(side.last[1])
                tidy(side, reset_lock=case.group != "lockout")
            a, b = outcome
            rows.append({"case": case.name, "group": case.group, "rc_ours": rc_of(a), "rc_libtpms": rc_of(b),
                         "len_ours": len(a), "len_libtpms": len(b),
                         "rc_len_agree": rc_of(a) == rc_of(b) and len(a) == len(b),
                         "fields_agree": case.key(a) == case.key(b), "note": case.note,
                         "ours": a.hex(), "libtpms": b.hex()})
    finally:
        libtpms.target.close()
    out = Path(os.environ.get("TRUSTLAB_CONFORMANCE_OUT") or tmp_path_factory.mktemp("conformance"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "tpm12_vs_libtpms.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(table(rows))
    return rows


def tidy(side, reset_lock: bool) -> None:
    """What a TSS resource manager does between cases, unjudged: flush leftover authorization
    sessions (libtpms keeps a session whose command failed before its trailer was read) and,
    once there is an owner, reset the dictionary-attack counter so that the wrong-secret cases
    elsewhere do not trip the lockout the "lockout" group tests on purpose."""
    last = side.last
    rsp = side.execute(cap(C.TPM_CAP_HANDLE, struct.pack(">I", C.TPM_RT_AUTH)))
    if rc_of(rsp) == 0:
        count = struct.unpack(">H", rsp[14:16])[0]
        for i in range(count):
            handle = rsp[16 + 4 * i:20 + 4 * i]
            side.execute(frame(C.ORD["TPM_FlushSpecific"], handle + struct.pack(">I", C.TPM_RT_AUTH)))
    if reset_lock and side.ctx.get("owned"):
        quiet(side.tpm.call, "TPM_ResetLockValue", auth=[OWNER])
    side.last = last


def table(rows) -> str:
    groups = Counter(r["group"] for r in rows)
    lines = [f"{'group':16} {'cases':>5} {'rc+len':>7} {'fields':>7}"]
    for g in groups:
        rs = [r for r in rows if r["group"] == g]
        lines.append(f"{g:16} {len(rs):5} {sum(r['rc_len_agree'] for r in rs):7} {sum(r['fields_agree'] for r in rs):7}")
    n = len(rows)
    lines.append(f"{'total':16} {n:5} {sum(r['rc_len_agree'] for r in rows):7} {sum(r['fields_agree'] for r in rows):7}")
    lines += [f"  differs: {r['case']}: rc {r['rc_ours']}/{r['rc_libtpms']} len {r['len_ours']}/{r['len_libtpms']}"
              f"{'' if r['rc_len_agree'] else ''}{' fields' if not r['fields_agree'] else ''}"
              for r in rows if not (r["rc_len_agree"] and r["fields_agree"])]
    return "\n".join(lines)


def test_conformance_with_libtpms(results) -> None:
    """One test (xdist would run a module fixture once per worker): size, agreement, documentation."""
    assert len(results) >= 150
    agree = sum(r["rc_len_agree"] for r in results) / len(results)
    assert agree >= MIN_AGREEMENT, table(results)
    documented = set(re.findall(r"^\| `(\w+)` \|", README.read_text(encoding="utf-8"), re.M))
    differing = {r["case"] for r in results if not (r["rc_len_agree"] and r["fields_agree"])}
    assert differing <= documented, f"undocumented differences: {sorted(differing - documented)}"
    assert documented <= {r["case"] for r in results}, "README lists cases that no longer exist"
