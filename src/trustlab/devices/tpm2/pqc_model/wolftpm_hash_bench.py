"""What wolfTPM's published SHA-256 rate times, read from its bench source, for placing a chip's core.

Why: a TPM profile built from wolfTPM's benchmark table places the chip's core speed by its own SHA-256
rate (:func:`.chipspec.for_profile`). The profile's ``sha256_byte`` is (one counted KB's time - 3 x ohc) /
1024 (:mod:`trustlab.data.wolftpm`; ohc there is a 32-byte TPM2_GetRandom whenever ``sha256_byte`` > 0).
What is left per byte is whatever the three commands do beyond a GetRandom. The source (wolfSSL/wolfTPM,
snapshot 68deab3c) says what that is:

* ``examples/bench/bench.c`` l.521-522: ``bench_sym_hash(.., TPM_ALG_SHA256, message.buffer,
  sizeof(message.buffer), ..)``; ``message`` is a WOLFTPM2_BUFFER, ``buffer[MAX_DIGEST_BUFFER]`` = 1024
  bytes (``wolftpm/tpm2_wrap.h`` l.140-143, ``wolftpm/tpm2_types.h`` l.761).
* ``bench_sym_hash`` (l.151-175), one count = ``wolfTPM2_HashStart`` + ``wolfTPM2_HashUpdate`` (1024 B) +
  ``wolfTPM2_HashFinish``; the window closes after whole counts and the rate is count x 1024 B / window
  (``bench_stats_sym_finish`` l.60-110, KB = 1024 B as ``gUseBase2`` = 1, l.44).
* ``src/tpm2_wrap.c``: HashStart (l.7811) = one TPM2_HashSequenceStart carrying the sequence auth
  ``gUsageAuth`` ("ThisIsASecretUsageAuth", 22 B, ``examples/tpm_test.h`` l.74), no session; HashUpdate
  (l.7858) = TPM2_SequenceUpdate in chunks of ``sizeof(TPM2B_MAX_BUFFER.buffer)`` = 1024 B (l.7878): one
  command, under a password session with that auth (l.7871); HashFinish (l.7905) = TPM2_SequenceComplete
  with an empty buffer and ``hierarchy = TPM_RH_NULL`` (l.7922), password session again.
* With ``TPM_RH_NULL`` the TPM returns a NULL ticket <tag, TPM_RH_NULL, empty digest>: no proof HMAC
  (TPM 2.0 Library Part 2, 10.6.5; wolfTPM's fwTPM ``FwAppendTicket``, ``src/fwtpm/fwtpm_crypto.c``
  l.337-348). Password sessions carry no HMAC either; the published runs use no parameter encryption
  (no ``-aes``/``-xor``; "Use Parameter Encryption: NULL" where printed).

So one count is 3 commands (what the profile subtracts), no ticket or session HMAC (nothing to
subtract), and two things the placement must count exactly:

* hashing: SHA-256 of a 1024-byte message compresses 17 blocks, not 16 -- 1024 is a multiple of 64, so
  the padding (one bit, zeros, the 64-bit length: FIPS 180-4, 5.1.1) takes a block of its own, computed in
  SequenceComplete. The Cortex-M4 references the placement compares with are long-message rates
  (:data:`.estimate.SHA256_M4_SOURCE`, :data:`.estimate.SHA_PLACEMENT_SOURCE`), so the chip's rate per
  compressed byte is :data:`COMPRESSED_BYTES` / 1024 times its rate per counted byte;
* the bus: the three commands move :data:`SEQUENCE_WIRE_BYTES` bytes; three GetRandom(32) (the ohc the
  profile subtracted, bus included) move 3 x :data:`GETRANDOM_WIRE_BYTES`; the rest crosses the bus on top
  of the hashing: :data:`EXTRA_WIRE_BYTES` per counted KB, not 1024.
"""

from __future__ import annotations

COUNTED_BYTES = 1024
"""Bytes one count adds to the published rate (bench.c l.521, WOLFTPM2_BUFFER)."""
COMMANDS = 3
"""TPM2_HashSequenceStart + TPM2_SequenceUpdate + TPM2_SequenceComplete per count (tpm2_wrap.c)."""
SHA256_BLOCK = 64
COMPRESSED_BYTES = SHA256_BLOCK * (COUNTED_BYTES // SHA256_BLOCK + 1)
"""1088: 16 message blocks + the padding block (FIPS 180-4, 5.1.1: 1024 + 1 + 64 bits need a 17th block)."""

_HEADER = 10                      # tag, commandSize/responseSize, commandCode/responseCode
_AUTH = 22                        # gUsageAuth, examples/tpm_test.h l.74
_PW_SESSION_CMD = 4 + 4 + 2 + 1 + 2 + _AUTH   # authorizationSize, TPM_RS_PW, empty nonce, attributes, hmac=auth
_PW_SESSION_RSP = 4 + 2 + 1 + 2   # parameterSize, empty nonce, attributes, empty hmac
WIRE_BYTES = {
    "TPM2_HashSequenceStart": (_HEADER + 2 + _AUTH + 2) + (_HEADER + 4),            # auth, hashAlg | handle
    "TPM2_SequenceUpdate": (_HEADER + 4 + _PW_SESSION_CMD + 2 + COUNTED_BYTES) + (_HEADER + _PW_SESSION_RSP),
    "TPM2_SequenceComplete": ((_HEADER + 4 + _PW_SESSION_CMD + 2 + 4)               # empty buffer, hierarchy
                              + (_HEADER + 4 + 2 + 32 + (2 + 4 + 2) + 5)),          # digest, NULL ticket, session
}
"""Command + response bytes of each command of one count, as wolfTPM marshals them (TPM 2.0 Part 3)."""
SEQUENCE_WIRE_BYTES = sum(WIRE_BYTES.values())
GETRANDOM_WIRE_BYTES = (_HEADER + 2) + (_HEADER + 2 + 32)
"""TPM2_GetRandom(32), the command ohc is taken from (wolfTPM MAX_RNG_REQ_SIZE = 32, tpm2_types.h l.844)."""
EXTRA_WIRE_BYTES = SEQUENCE_WIRE_BYTES - COMMANDS * GETRANDOM_WIRE_BYTES
"""Bytes on the bus per count beyond those inside the three ohc the profile subtracted."""

SOURCE = ("wolfSSL/wolfTPM 68deab3c examples/bench/bench.c bench_sym_hash (l.151-175, SHA256 at l.521: 1 KB "
          "per count) -> src/tpm2_wrap.c HashStart/HashUpdate/HashFinish (l.7811/7858/7905): HashSequenceStart "
          "+ one 1024-B SequenceUpdate + SequenceComplete(hierarchy TPM_RH_NULL, l.7922: NULL ticket, no HMAC), "
          "password sessions; SHA-256 compresses 17 blocks per 1024-B message (FIPS 180-4 5.1.1)")


def compression_bytes_per_ms(sha256_byte_ms: float, bus_ms_per_byte: float) -> float | None:
    """The chip's SHA-256 compression rate (bytes per ms) from a wolfTPM profile's ``sha256_byte`` (ms per
    counted byte, three command overheads already removed) and the bus time per byte; None when nothing is
    left for the hashing once the bus is taken off."""
    compute_per_count = sha256_byte_ms * COUNTED_BYTES - bus_ms_per_byte * EXTRA_WIRE_BYTES
    if compute_per_count <= 0:
        return None
    return COMPRESSED_BYTES / compute_per_count
