"""The paths added to match wolfTPM (issue 27, item 5) under mutated frames and a backend answering nonsense.

Classical keys through the 1.85 commands, public-only objects (TPM2_LoadExternal),
hash-check tickets and TPM_PT_ML_PARAMETER_SETS: every answer is a well-formed
TPM response and no handler raises (a raise would be TPM_RC_FAILURE with a fault).
"""

from __future__ import annotations

import random
import struct

from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import state as pqc_state
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import frame, password

from .conftest import make_profile
from .pqc_mutation import assert_mutants_never_fault


def nonsense_backend(rng: random.Random):
    """Success with a few random bytes, or a random error code: what a confused backend might say."""
    def answer(command: bytes) -> bytes:
        if rng.random() < 0.3:
            return struct.pack(">HII", 0x8001, 10, rng.choice([0x18B, 0x922, 0x9A2, 0x3E0, 0x2D5, 0x101]))
        tail = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
        return struct.pack(">HII", command[:2] == b"\x80\x02" and 0x8002 or 0x8001, 10 + len(tail), 0) + tail
    return answer


def test_mutated_frames_on_the_wolftpm_parity_paths_never_crash_a_handler():
    rng = random.Random(27)
    c = ext.Context("conn", make_profile(ohc=1.0, ohir=0.01, ohor=0.02), nonsense_backend(rng),
                    ext.ExtensionState())
    state = pqc_state.state_of(c)
    dsa = mldsa.MLDSA44PrivateKey.from_seed_bytes(b"\x03" * 32)
    restricted = S.Public(S.TPM_ALG_HASH_MLDSA, S.TPM_ALG_SHA256, 0x50072, b"", 1, hash_alg=S.TPM_ALG_SHA256,
                          unique=dsa.public_key().public_bytes_raw())
    state.objects[0x80FF0000] = pqc_state.PqcObject(0x80FF0000, restricted, keys.MLDSA_SETS[1], dsa, b"",
                                                    restricted.name(), restricted.name())
    kem_pub = mlkem.MLKEM768PrivateKey.from_seed_bytes(b"\x04" * 64).public_key().public_bytes_raw()
    external = S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.DECRYPT, b"", 2, unique=kem_pub)
    ticket = S.u16(S.TPM_ST_HASHCHECK) + S.u32(S.TPM_RH_OWNER) + S.tpm2b(b"\x11" * 32)
    seeds = [
        frame(0x1A6, [0x80000001], S.tpm2b(b"") + S.tpm2b(b"\x01" * 32) + S.null_hashcheck_ticket(), [password()]),
        frame(0x1A5, [0x80000001], S.tpm2b(b"") + S.tpm2b(b"\x01" * 32) + S.u16(0x18) + S.u16(0x0B)
              + S.tpm2b(b"\x02" * 32) + S.tpm2b(b"\x03" * 32)),
        frame(0x1AA, [0x80000001], S.tpm2b(b"") + S.tpm2b(b"")),
        frame(0x1A9, [0x80000001], S.tpm2b(b"") + S.tpm2b(b"") + S.tpm2b(b"")),
        frame(0x1A6, [0x80FF0000], S.tpm2b(b"") + S.tpm2b(b"\x01" * 32) + ticket, [password()]),
        frame(0x167, [], S.u16(0) + S.tpm2b(external.marshal()) + S.u32(S.TPM_RH_NULL)),
        frame(0x17A, [], S.u32(6) + S.u32(0x100) + S.u32(64)),
        frame(0x15C, [0x80FF0001], S.tpm2b(b"m" * 100), [password()]),
        frame(0x1A4, [0x80FF0001, 0x80000001], S.tpm2b(b"m"), [password(), password()]),
        frame(0x1A3, [0x80FF0001, 0x80000001], S.u16(0x18) + S.u16(0x0B) + S.tpm2b(b"") + S.tpm2b(b""),
              [password()]),
    ]
    assert_mutants_never_fault(c, seeds, rng, rounds=1500, edits=(0, 3))
