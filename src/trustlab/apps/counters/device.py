"""The buyer's TPM, set up once: owner, SRK, a certifying signing key ("AIK"), one physical counter.

Both schemes need the same provisioning (paper, Sec. III-B: the AIK signs
every certificate; the log-based scheme also needs one physical monotonic
counter as its global clock). Setup commands are real and charged, then the
clock is reset, so experiments time only the counter operations - the paper
likewise leaves out "preliminary operations like loading a key".
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.apps import keypool
from trustlab.devices.tpm12 import Tpm12, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.keys import Key12, rsa_public
from trustlab.devices.tpm12.nvstore import NVStore
from trustlab.devices.tpm12.wire import Reader
from trustlab.timing.clock import Clock

COUNTER_LABEL = b"VCTR"


@dataclass
class ProvisionedTpm:
    """A ready TPM and the public facts a verifier is given out of band."""

    tpm: Tpm12
    owner_auth: bytes
    aik: int
    aik_auth: bytes
    aik_public: rsa.RSAPublicKey
    counter_id: int
    counter_auth: bytes
    counter_start: int


def provision(clock: Clock, nv: NVStore | None = None, *, physical_counter: bool = True,
              tpm: Tpm12 | None = None) -> ProvisionedTpm:
    """Take ownership, make and load the certifying signing key, create the physical counter; reset the clock.

    ``tpm``: a fresh host-side TPM to provision (e.g. one reached over the
    wire, :mod:`.wire`) instead of a new in-process engine on ``nv``; it is
    already started, as a platform's firmware leaves a TPM.
    """
    if tpm is None:
        tpm = Tpm12(clock, nv, keygen=keypool.cursor(), started=False)  # host keys from the cached pool (not charged)
        tpm.TPM_Startup()
    owner, srk = secret("trustlab-owner"), secret("trustlab-srk")
    tpm.TPM_TakeOwnership(owner, srk)
    aik_auth = secret("trustlab-aik")
    # The certifying key ("AIK" in the paper) is a non-migratable signing key: rev 116 lets only
    # TPM_KEY_SIGNING keys sign a transport log (Part 3, 24.3 step 3), so identity keys are refused.
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, srk, key_template(C.TPM_KEY_SIGNING), aik_auth)
    aik_public = rsa_public(Key12.unmarshal(Reader(blob, "signing key blob")).pub)
    aik = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, srk)
    counter_auth = secret("trustlab-counter")
    counter_id, start = (tpm.TPM_CreateCounter(owner, counter_auth, COUNTER_LABEL)
                         if physical_counter else (0, 0))
    clock.reset()
    return ProvisionedTpm(tpm, owner, aik, aik_auth, aik_public, counter_id, counter_auth, start)
