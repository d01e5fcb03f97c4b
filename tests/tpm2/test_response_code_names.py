"""Response codes named as tpm2-tools and tpm2-pytss name them: the peer check of ``response_code_text``.

``tpm2_rc_decode`` (tpm2-tools, libtss2-rc) says where a format-one code points (``tpm:parameter(1):...``,
``handle(2)``, ``session(3)``, ``handle(unk)``) and whether a code is an error or a warning; tpm2-pytss'
``TPM2_RC`` holds the TCG names. Our tables (Part 2, Table 16) must agree with both on every code either knows.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from trustlab.devices.tpm2.commands import (
    RC_FMT1_NAMES,
    RC_VER1_NAMES,
    RC_WARN_NAMES,
    response_code_text,
)

TPM2_RC_DECODE = shutil.which("tpm2_rc_decode")
NEW_IN_1_85 = {"PARMS", "EXT_MU", "SIGN_CONTEXT_KEY"}
"""Format-one codes the 1.85 library adds: neither tpm2-pytss 3.0 nor libtss2-rc knows them yet."""


def _codes() -> list[int]:
    """Every named code bare, and each format-one code at a parameter, a handle and a session (1 and 7)."""
    out = [0x100 + n for n in RC_VER1_NAMES] + [0x900 + n for n in RC_WARN_NAMES] + [0x01E]
    for n in RC_FMT1_NAMES:
        out += [0x080 + n, 0x0C0 + n + 0x100, 0x0C0 + n + 0x700, 0x080 + n + 0x100, 0x080 + n + 0x700,
                0x880 + n + 0x100, 0x880 + n + 0x700]
    return out


def _ours(rc: int) -> tuple[str | None, str]:
    """(the TCG name without TPM_RC_, where it points as tpm2_rc_decode says it) from our text."""
    m = re.fullmatch(r"0x[0-9a-f]{3} \((?:TPM_RC_(\w+))?[^,)]*(?:, (parameter|handle|session) (\d+))?\)",
                     response_code_text(rc))
    assert m, response_code_text(rc)
    name, kind, n = m.groups()
    return name, f"{kind}({n})" if kind else ""


@pytest.mark.skipif(TPM2_RC_DECODE is None, reason="tpm2-tools' tpm2_rc_decode is not installed")
def test_names_and_places_agree_with_tpm2_rc_decode_and_tpm2_pytss():
    from tpm2_pytss.constants import TPM2_RC

    pytss = {v: k for k, v in vars(TPM2_RC).items()
             if k.isupper() and isinstance(v, int) and not re.fullmatch(r"RC\d|[A-Z]|VER1|FMT1|WARN|N_MASK|MAX_FM0|H|P|S", k)}
    checked = 0
    for rc in _codes():
        name, where = _ours(rc)
        said = subprocess.run([TPM2_RC_DECODE, hex(rc)], capture_output=True, text=True, check=True).stdout.strip()
        base = (rc & 0xBF) if rc & 0x80 else rc  # a format-one code's number stripped: the TCG constant
        if name in NEW_IN_1_85:
            assert "unknown error num" in said and base not in pytss, (hex(rc), said)
        elif base in pytss:
            assert name == pytss[base], (hex(rc), name, pytss[base])
        else:  # RESERVED_BITS: in Table 16 and in libtss2-rc, not in tpm2-pytss' enum
            assert name == "RESERVED_BITS" and "reserved bits" in said, (hex(rc), said)
        if rc & 0x80:
            assert said.startswith(f"tpm:{where or 'handle(unk)'}:"), (hex(rc), where, said)
        elif rc & 0x800:
            assert said.startswith("tpm:warn(2.0):") or said == f"tpm:{rc:#05X}".replace("0X", "0x"), (hex(rc), said)
        else:
            assert said.startswith("tpm:error("), (hex(rc), said)
        checked += 1
    assert checked > 250
    unnamed = [k for v, k in pytss.items() if k != "SUCCESS" and f"TPM_RC_{k})" not in response_code_text(v)]
    assert unnamed == []  # and every code tpm2-pytss names, we name


def test_the_forged_context_answer_and_other_places():
    assert response_code_text(0x1DF) == "0x1df (TPM_RC_INTEGRITY, parameter 1)"
    assert response_code_text(0x9A2) == "0x9a2 (TPM_RC_BAD_AUTH, session 1)"
    assert response_code_text(0x18B) == "0x18b (TPM_RC_HANDLE, handle 1)"
    assert response_code_text(0x095) == "0x095 (TPM_RC_SIZE)"
    assert response_code_text(0xFD5) == "0xfd5 (TPM_RC_SIZE, parameter 15)"  # P: N is four bits (Table 15)
    assert response_code_text(0x922) == "0x922 (TPM_RC_RETRY)"
    assert response_code_text(0x101) == "0x101 (TPM_RC_FAILURE)"
    assert response_code_text(0x0BE) == "0x0be (format-one error 0x3e)"
    assert response_code_text(0x51E) == "0x51e (vendor-specific error 0x1e)"
    assert response_code_text(0x005) == "0x005 (a TPM 1.2 code)"
