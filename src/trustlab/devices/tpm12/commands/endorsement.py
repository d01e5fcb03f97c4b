"""The endorsement key: TPM_CreateEndorsementKeyPair, TPM_ReadPubek, TPM_OwnerReadInternalPub (Part 3, 14, 27).

An engine built with ``Engine(..., ek=False)`` leaves the factory without an
EK, as libtpms does before ``swtpm_setup``: then TPM_ReadPubek and
TPM_TakeOwnership answer TPM_NO_ENDORSEMENT until TPM_CreateEndorsementKeyPair
makes one. Once made, the EK cannot be made again (TPM_DISABLED_CMD).
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import KeyParms, modulus_of
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

EK_PARMS = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE)


def ek(tpm):
    if tpm.state.ek is None:
        raise TpmError("TPM_NO_ENDORSEMENT", "the TPM has no endorsement key (TPM_CreateEndorsementKeyPair)")
    return tpm.state.ek


def ek_pubkey(tpm) -> bytes:
    """TPM_PUBKEY of the EK (Part 2, 10.5)."""
    return EK_PARMS.marshal() + Writer().sized(modulus_of(ek(tpm))).bytes()


def create_ek(tpm, anti_replay: bytes, parms: KeyParms) -> bytes:
    """TPM_CreateEndorsementKeyPair's actions (libtpms TPM_CreateEndorsementKeyPair_Common, shared with
    TPM_CreateRevocableEK): the EK once, RSA-2048; returns pubEndorsementKey || checksum."""
    if tpm.state.ek is not None:
        raise TpmError("TPM_DISABLED_CMD", "the endorsement key exists already")
    if parms.algorithm != C.TPM_ALG_RSA or parms.key_bits != 2048:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "the EK is a 2048-bit RSA key")
    tpm.state.ek = tpm.crypto.rsa_generate(2048)
    tpm.state.extra["cekp_used"] = "1"
    tpm.mark_dirty()
    pub = ek_pubkey(tpm)
    return pub + tpm.crypto.sha1(pub, anti_replay)


@tpm_command("TPM_CreateEndorsementKeyPair")
def create_endorsement_key_pair(tpm, req: Request) -> Response:
    anti_replay = req.params.raw(20)
    parms = KeyParms.unmarshal(req.params)
    req.params.end()
    return Response(params=create_ek(tpm, anti_replay, parms))


@tpm_command("TPM_ReadPubek")
def read_pubek(tpm, req: Request) -> Response:
    nonce = req.params.raw(20)
    req.params.end()
    ek(tpm)
    if not flags.permanent(tpm, "readPubek"):  # Part 3, 27.6: FALSE once an owner exists
        raise TpmError("TPM_DISABLED_CMD", "the owner has disabled TPM_ReadPubek")
    pub = ek_pubkey(tpm)
    return Response(params=pub + tpm.crypto.sha1(pub, nonce))


@tpm_command("TPM_OwnerReadPubek", auth=(1,))
def owner_read_pubek(tpm, req: Request) -> Response:
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    return Response(params=ek_pubkey(tpm))


@tpm_command("TPM_OwnerReadInternalPub", auth=(1,))
def owner_read_internal_pub(tpm, req: Request) -> Response:
    handle = req.params.u32()
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    if handle == C.TPM_KH_EK:
        return Response(params=ek_pubkey(tpm))
    if handle == C.TPM_KH_SRK:
        return Response(params=tpm.srk_loaded().blob.pubkey())
    raise TpmError("TPM_BAD_PARAMETER", f"keyHandle {handle:#010x} is neither TPM_KH_EK nor TPM_KH_SRK")
