"""TPM_CreateWrapKey's key-usage checks: our engine against libtpms, usage for usage.

Each template carries its usage's mandatory schemes (Part 2, 5.7.1), so the
answer comes from the usage checks themselves (libtpms: TPM_Key_CheckProperties
gives TPM_BAD_KEY_PROPERTY first, then steps 4-6 of TPM_Process_CreateWrapKey
give TPM_INVALID_KEYUSAGE); the client's default MIGRATE template (no OAEP)
and a CMK template are checked too. Both TPMs must give the same return code.
"""

from __future__ import annotations

import shutil

import pytest

from trustlab.devices.tpm12 import TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.keys import Key12, KeyParms
from trustlab.devices.tpm12.primitives import KeyPool

from .conformance_cases import OAEP_PARMS, frame
from .differential import pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

OWNER, SRK, KEY = secret("owner"), secret("srk"), secret("key")
OAEP, SHA1 = C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_RSASSAPKCS1v15_SHA1
UNDEFINED_USAGE = 0x0020


def template(usage: int, enc: int, sig: int, flags: int = 0) -> Key12:
    return Key12(usage, flags, C.TPM_AUTH_ALWAYS, KeyParms(C.TPM_ALG_RSA, enc, sig), b"")


CASES = {
    "SIGNING": template(C.TPM_KEY_SIGNING, C.TPM_ES_NONE, SHA1),
    "STORAGE": template(C.TPM_KEY_STORAGE, OAEP, C.TPM_SS_NONE),
    "IDENTITY": template(C.TPM_KEY_IDENTITY, C.TPM_ES_NONE, SHA1),
    "AUTHCHANGE": template(C.TPM_KEY_AUTHCHANGE, OAEP, C.TPM_SS_NONE),
    "BIND": template(C.TPM_KEY_BIND, OAEP, C.TPM_SS_NONE),
    "LEGACY": template(C.TPM_KEY_LEGACY, OAEP, SHA1),
    "MIGRATE": template(C.TPM_KEY_MIGRATE, OAEP, C.TPM_SS_NONE),
    "MIGRATE-client-default": key_template(C.TPM_KEY_MIGRATE),
    "undefined-0x0020": template(UNDEFINED_USAGE, OAEP, C.TPM_SS_NONE),
    "CMK-SIGNING": template(C.TPM_KEY_SIGNING, C.TPM_ES_NONE, SHA1,
                            C.TPM_KEY_FLAG_MIGRATABLE | C.TPM_KEY_FLAG_MIGRATE_AUTHORITY),
    # the order of the checks: the schemes (step 3) before the usage and flags (step 6)
    "IDENTITY-bad-schemes": template(C.TPM_KEY_IDENTITY, OAEP, C.TPM_SS_NONE),
    "AUTHCHANGE-bad-schemes": template(C.TPM_KEY_AUTHCHANGE, C.TPM_ES_NONE, SHA1),
    "CMK-undefined-usage": template(UNDEFINED_USAGE, OAEP, C.TPM_SS_NONE,
                                    C.TPM_KEY_FLAG_MIGRATABLE | C.TPM_KEY_FLAG_MIGRATE_AUTHORITY),
}


@pytest.fixture(scope="module")
def sides():
    ours, libtpms = pair(KeyPool())
    for s in (ours, libtpms):
        s.raw(frame(C.ORD["TPM_Startup"], b"\x00\x01"))
        s.raw(frame(C.ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20 + OAEP_PARMS.marshal()))
        s.tpm.TPM_TakeOwnership(OWNER, SRK)
    yield ours, libtpms
    libtpms.target.close()


def outcome(side, t: Key12) -> str:
    try:
        Key12.from_bytes(side.tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, t, KEY))
    except TpmError as e:
        return e.code
    return "TPM_SUCCESS"


@pytest.mark.parametrize("name", list(CASES))
def test_create_wrap_key_usage_matches_libtpms(sides, name) -> None:
    ours, libtpms = sides
    assert outcome(ours, CASES[name]) == outcome(libtpms, CASES[name])
