"""TPM2_GetCapability through serve answers byte for byte as it did before the PQC fast path.

The PQC extension merges its algorithms, commands and TPM_PT_ML_PARAMETER_SETS
into swtpm's lists; to keep serving cheap it claims only the requests whose
answer it changes. Whether it claims too little shows up here: every
capability/property range a TSS asks (tpm2_getcap's capability list, with
tpm2-tools' page sizes) and every start point around the entries the extension
adds, with small pages that end just before, on and after them, compared with
a recording made by the code that claimed every GetCapability (commit 8d480ff).
The recording holds swtpm's answers too, so it is only compared on the swtpm
it was made with (``swtpm --version``).

Re-record (only when swtpm's own answers changed): ``PYTHONPATH=src python
tests/tpm2/test_pqc_getcap_recording.py``.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from trustlab.devices.tpm2 import wire

RECORDING = Path(__file__).parent / "data" / "pqc_getcap_recording.json"
PROFILE = "st-st33ktpm2xspi-wolftpm"

# tpm2-tools' tpm2_getcap: capability, first, its page size (MAX_CAP_*, MAX_TPM_PROPERTIES ...)
TPM2_GETCAP = [
    (0x0, 0x0001, 169),           # algorithms
    (0x2, 0x011F, 254),           # commands
    (0x3, 0x011F, 254),           # pp-commands
    (0x4, 0x011F, 254),           # audit-commands
    (0x5, 0, 1),                  # pcrs
    (0x6, 0x100, 127),            # properties-fixed
    (0x6, 0x200, 127),            # properties-variable
    (0x7, 0x0, 112),              # pcr properties
    (0x8, 0x0001, 508),           # ecc-curves
    (0x9, 0x40000000, 14),        # auth policies
    (0x1, 0x80000000, 254),       # handles-transient
    (0x1, 0x81000000, 254),       # handles-persistent
    (0x1, 0x01000000, 254),       # handles-nv-index
    (0x1, 0x02000000, 254),       # handles-loaded-session
    (0x1, 0x03000000, 254),       # handles-saved-session
    (0x1, 0x00000000, 254),       # handles-pcr
    (0x1, 0x40000000, 254),       # handles-permanent
]


def requests() -> list[tuple[int, int, int]]:
    """Every range above, and every start around the extended entries with pages of 1, 2, 3 and 8."""
    out = list(TPM2_GETCAP)
    starts = {
        0x0: [*range(0x0, 0xC0), 0x100, 0x8000, 0xFFFF],                        # algorithm IDs (PQC: 0xA0-0xA2)
        0x2: [0x0, *range(0x11F, 0x1B0), 0x20000000, 0xFFFFFFFF],              # command codes (PQC: 0x1A3-0x1AA)
        0x6: [0x0, *range(0xFF, 0x140), *range(0x1FF, 0x214), 0x300, 0xFFFFFFFF],  # TPM_PT (0x129, 0x12A, 0x131)
    }
    for cap, firsts in starts.items():
        for first in firsts:
            for count in (1, 2, 3, 8):
                out.append((cap, first, count))
    return out


def _key(request: tuple[int, int, int]) -> str:
    return "%x:%x:%x" % request


def _answers(rounds: int = 1) -> list[dict[str, str]]:
    """The answers to :func:`requests`, asked ``rounds`` times of one serve (a request asked again may
    take another path: the extension passes on what it found it leaves untouched)."""
    from trustlab.serving.proxy import timed_swtpm

    with timed_swtpm(PROFILE, virtual=True) as proxy:
        return [{_key(r): proxy.execute(wire.build_command(0x17A, struct.pack(">III", *r))).hex()
                 for r in requests()} for _ in range(rounds)]


def _with_reported_sizes(response_hex: str, size: int) -> str:
    """The recorded answer as serve gives it since the profile sets TPM_PT_MAX_COMMAND_SIZE / MAX_RESPONSE_SIZE
    (serving/tpm2/limits.py): those two properties carry ``size`` in place of libtpms' 4096; nothing else moves."""
    rsp = bytearray(bytes.fromhex(response_hex))
    if len(rsp) < 19 or rsp[6:10] != bytes(4) or struct.unpack_from(">I", rsp, 11)[0] != 6:
        return response_hex
    for i in range(struct.unpack_from(">I", rsp, 15)[0]):
        at = 19 + 8 * i
        if struct.unpack_from(">I", rsp, at)[0] in (0x11E, 0x11F):
            struct.pack_into(">I", rsp, at + 4, size)
    return rsp.hex()


def _swtpm_version() -> str:
    return subprocess.run(["swtpm", "--version"], capture_output=True, text=True).stdout.strip()


@pytest.mark.swtpm
@pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")
def test_every_getcap_range_answers_as_recorded():
    recorded = json.loads(RECORDING.read_text())
    if recorded["swtpm"] != _swtpm_version():
        pytest.skip(f"recording made on {recorded['swtpm']!r}, not this swtpm")
    from trustlab.serving.tpm2 import limits

    size = limits.for_profile(PROFILE).command
    expected = {k: _with_reported_sizes(v, size) for k, v in recorded["answers"].items()}
    assert sum(expected[k] != v for k, v in recorded["answers"].items()) > 10  # the ranges holding the two
    for n, answers in enumerate(_answers(rounds=2), 1):
        assert set(answers) == set(expected)
        differing = [k for k in answers if answers[k] != expected[k]]
        assert not differing, f"round {n}: {len(differing)} GetCapability answers changed, first: {differing[:5]}"


if __name__ == "__main__":
    RECORDING.write_text(json.dumps({"swtpm": _swtpm_version(), "answers": _answers()[0]}, indent=0) + "\n")
    print(f"{RECORDING}: {len(requests())} answers", file=sys.stderr)
