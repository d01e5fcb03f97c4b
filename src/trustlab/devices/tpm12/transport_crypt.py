"""Encrypted transport sessions (Part 3, 24.2 steps 4 and 17): the pads, shared by TPM and host.

The DATAw area of a wrapped command (its parameters, after the handles and
before the authorization trailers) and of its response is encrypted with
either an MGF1 stream (TPM_ALG_MGF1; seed ``lastNonceEven || nonceOdd || "in"
|| authData``, "out" and the new nonceEven for the response) or AES-128 in
CTR or OFB mode (key = the first 16 bytes of authData, IV/CTR = MGF1 of
``nonceEven || nonceOdd || "in"``, 16 bytes). In CTR mode only the low 32 bits
of the counter count, as libtpms does. Pure functions over a SHA-1 callable, so
the engine charges its hashing and the host uses hashlib.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Callable

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError

Hash = Callable[..., bytes]
AES_BLOCK = 16


def _sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def mgf1(sha1: Hash, seed: bytes, length: int) -> bytes:
    """MGF1 with SHA-1 (PKCS#1 v2.1, B.2.1), counter from 0."""
    out = b"".join(sha1(seed, struct.pack(">I", i)) for i in range(-(-length // 20)))
    return out[:length]


def check_scheme(alg: int, scheme: int) -> None:
    """Part 3, 24.1 step 7 (libtpms TPM_TransportPublic_CheckEncScheme)."""
    if alg == C.TPM_ALG_MGF1:
        if scheme != C.TPM_ES_NONE:
            raise TpmError("TPM_INAPPROPRIATE_ENC", "TPM_ALG_MGF1 takes TPM_ES_NONE")
    elif alg == C.TPM_ALG_AES128:
        if scheme not in (C.TPM_ES_SYM_CTR, C.TPM_ES_SYM_OFB):
            raise TpmError("TPM_INAPPROPRIATE_ENC", "AES-128 transport uses CTR or OFB")
    else:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"transport encryption algorithm {alg:#x}")


def crypt(alg: int, scheme: int, secret: bytes, even: bytes, odd: bytes, label: bytes, data: bytes,
          sha1: Hash = _sha1) -> bytes:
    """Encrypt or decrypt (the same XOR) ``data`` with the session's pad for one direction."""
    if not data:
        return data
    if alg == C.TPM_ALG_MGF1:
        pad = mgf1(sha1, even + odd + label + secret, len(data))
    else:
        iv = mgf1(sha1, even + odd + label, AES_BLOCK)
        aes = Cipher(algorithms.AES(secret[:AES_BLOCK]), modes.ECB()).encryptor()
        n = -(-len(data) // AES_BLOCK)
        if scheme == C.TPM_ES_SYM_CTR:
            head, low = iv[:12], struct.unpack(">I", iv[12:])[0]
            blocks = b"".join(head + struct.pack(">I", (low + i) & 0xFFFFFFFF) for i in range(n))
            pad = aes.update(blocks)
        else:  # OFB: each pad block is the encryption of the previous one
            blocks, block = [], iv
            for _ in range(n):
                block = aes.update(block)
                blocks.append(block)
            pad = b"".join(blocks)
    n = len(data)
    return (int.from_bytes(data, "big") ^ int.from_bytes(pad[:n], "big")).to_bytes(n, "big")
