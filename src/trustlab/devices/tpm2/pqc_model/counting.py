"""Run one ML-KEM / ML-DSA operation instrumented and return its :class:`Tally`.

The inputs are drawn from ``random.Random(seed)`` so that a run is reproducible:
key seeds, messages and signing randomness are random bytes, as on a TPM whose
RNG feeds them. The counts table shipped in ``data/op_counts.json`` is these
runs over many seeds (``tools/build_pqc_counts.py``).
"""

from __future__ import annotations

import random

from trustlab.devices.tpm2.pqc_model import mldsa, mlkem
from trustlab.devices.tpm2.pqc_model.params import MLDSAParams, check_operation
from trustlab.devices.tpm2.pqc_model.tally import Tally

DEFAULT_MESSAGE_BYTES = 32
"""A TPM signs a digest (TPM2_SignDigest): the ML-DSA message is 32 bytes (SHA-256)."""


def run(algorithm: str, operation: str, seed: int, message_bytes: int = DEFAULT_MESSAGE_BYTES) -> Tally:
    """The work of one ``operation`` with fresh random inputs from ``seed`` (only that operation counted)."""
    p = check_operation(algorithm, operation)
    rnd = random.Random(seed)
    draw = rnd.randbytes
    if isinstance(p, MLDSAParams):
        t = Tally()
        pk, sk = mldsa.keygen(t if operation == "keygen" else Tally(), p, draw(32))
        if operation == "keygen":
            return t
        msg = draw(message_bytes)
        sig = mldsa.sign(t if operation == "sign" else Tally(), p, sk, msg, draw(32))
        if operation == "verify":
            if not mldsa.verify(t, p, pk, msg, sig):
                raise AssertionError(f"{algorithm}: own signature did not verify (seed {seed})")
        return t
    t = Tally()
    ek, dk = mlkem.keygen(t if operation == "keygen" else Tally(), p, draw(32), draw(32))
    if operation == "keygen":
        return t
    key, c = mlkem.encaps(t if operation == "encapsulate" else Tally(), p, ek, draw(32))
    if operation == "decapsulate" and mlkem.decaps(t, p, dk, c) != key:
        raise AssertionError(f"{algorithm}: decapsulation disagrees (seed {seed})")
    return t
