"""What wolfTPM's SHA-256 bench figure times, and how a wolfTPM profile's core is placed from it.

The byte counts are checked against tpm2-pytss' marshalling (a peer's TPM 2.0 types), the padding
block against FIPS 180-4's padding rule (one 0x80 byte, zeros, an 8-byte length).
"""

import pytest
from tpm2_pytss.constants import TPM2_RH, TPM2_ST
from tpm2_pytss.types import (TPM2B_AUTH, TPM2B_DIGEST, TPM2B_MAX_BUFFER, TPMS_AUTH_COMMAND, TPMS_AUTH_RESPONSE,
                              TPMT_TK_HASHCHECK)

from trustlab.devices.tpm2.pqc_model import chipspec, wolftpm_hash_bench as bench
from trustlab.timing import registry

HEADER = 10
AUTH = b"ThisIsASecretUsageAuth"  # wolfTPM examples/tpm_test.h gUsageAuth
TPM_RS_PW = 0x40000009


def test_sha256_of_one_kb_compresses_seventeen_blocks():
    padded = 1024 + 1 + 8  # message, 0x80, 64-bit length (FIPS 180-4 5.1.1)
    assert bench.COMPRESSED_BYTES == -(-padded // 64) * 64 == 17 * 64


def test_wire_bytes_match_a_peer_marshaller():
    pw = 4 + len(TPMS_AUTH_COMMAND(sessionHandle=TPM_RS_PW, hmac=AUTH).marshal())  # authorizationSize + session
    pw_rsp = 4 + len(TPMS_AUTH_RESPONSE().marshal())                                   # parameterSize + session
    start = HEADER + len(TPM2B_AUTH(AUTH).marshal()) + 2 + HEADER + 4
    update = HEADER + 4 + pw + len(TPM2B_MAX_BUFFER(b"\0" * 1024).marshal()) + HEADER + pw_rsp
    complete = (HEADER + 4 + pw + len(TPM2B_MAX_BUFFER(b"").marshal()) + 4
                + HEADER + pw_rsp + len(TPM2B_DIGEST(b"\0" * 32).marshal())
                + len(TPMT_TK_HASHCHECK(tag=TPM2_ST.HASHCHECK, hierarchy=TPM2_RH.NULL).marshal()))
    assert bench.WIRE_BYTES == {"TPM2_HashSequenceStart": start, "TPM2_SequenceUpdate": update,
                                "TPM2_SequenceComplete": complete}
    assert bench.GETRANDOM_WIRE_BYTES == HEADER + 2 + HEADER + len(TPM2B_DIGEST(b"\0" * 32).marshal())
    assert bench.EXTRA_WIRE_BYTES == start + update + complete - 3 * bench.GETRANDOM_WIRE_BYTES


def test_wolftpm_profile_is_placed_per_compressed_byte_with_the_sequence_bus_bytes():
    profile = registry.load("sealsq-qvault-pqc-tpm-wolftpm")
    spec = chipspec.for_profile(profile)
    bus = sorted(spec.bus_ms_per_byte((i + 0.5) / 32) for i in range(32))
    median_bus = (bus[15] + bus[16]) / 2
    compute = profile.mean("sha256_byte") * 1024 - median_bus * bench.EXTRA_WIRE_BYTES
    assert spec.sha256_bytes_per_ms == pytest.approx(1088 / compute)
    assert "bench.c" in spec.sha256_source and "TPM_RH_NULL" in spec.sha256_source


def test_other_sources_keep_the_plain_per_byte_rate():
    name = next(n for n in registry.names("tpm2") if n.endswith("-jcalgtest")
                and chipspec.for_profile(registry.load(n)).sha256_bytes_per_ms)
    spec = chipspec.for_profile(registry.load(name))
    assert "bench.c" not in spec.sha256_source


def test_nothing_left_for_hashing_gives_no_rate():
    assert bench.compression_bytes_per_ms(1e-6, 1.0) is None
