"""TPM_KeyControlOwner (Part 3, 21.1): the owner sets a loaded key's owner-evict bit.

Checks in libtpms' order (TPM_Process_KeyControlOwner): owner authorization, key loaded
(TPM_INVALID_KEYHANDLE; the SRK is no slot), key usage (TPM_INVALID_KEYUSAGE), the TPM_PUBKEY sent
equals the key's (TPM_BAD_PARAMETER: the handle carries no authorization of its own), bitName
(TPM_BAD_MODE). Setting the bit needs two slots left for ordinary keys (TPM_NOSPACE), a key that is
neither volatile nor under a PCR-bound parent (TPM_BAD_PARAMETER), and a free owner-evict slot
(TPM_NOSPACE); setting it again, or clearing a clear bit, changes nothing.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.keys import KEY_SLOTS
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import KeyParms
from trustlab.devices.tpm12.owner_evict import OWNER_EVICT_SLOTS, evict_handles, set_owner_evict
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

TPM_KEY_CONTROL_OWNER_EVICT = 0x00000001  # Part 2, 5.19
_USAGES = (C.TPM_KEY_SIGNING, C.TPM_KEY_STORAGE, C.TPM_KEY_IDENTITY, C.TPM_KEY_BIND, C.TPM_KEY_LEGACY)


@tpm_command("TPM_KeyControlOwner", handles=1, auth=(1,))
def key_control_owner(tpm, req: Request) -> Response:
    handle = req.handles[0]
    parms = KeyParms.unmarshal(req.params)
    pubkey = Writer().raw(parms.marshal()).sized(req.params.sized(4096)).bytes()
    bit_name, bit_value = req.params.u32(), req.params.u8()
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))  # step 1
    key = tpm.keys.get(handle)
    if key is None:  # step 2
        raise TpmError("TPM_INVALID_KEYHANDLE", f"no loaded key {handle:#010x}")
    if key.blob.usage not in _USAGES:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key usage {key.blob.usage:#06x} cannot be owner-evict")
    if pubkey != key.blob.pubkey():  # step 3
        raise TpmError("TPM_BAD_PARAMETER", f"pubKey is not the public key of {handle:#010x}")
    if bit_name != TPM_KEY_CONTROL_OWNER_EVICT:  # step 4
        raise TpmError("TPM_BAD_MODE", f"bitName {bit_name:#010x} (only TPM_KEY_CONTROL_OWNER_EVICT, 1)")
    evict = evict_handles(tpm)
    if bool(bit_value) == (handle in evict):
        return Response()  # nothing to change (libtpms writes no NV then)
    if bit_value:  # step 5.a
        if KEY_SLOTS - len(evict) < 2:  # libtpms TPM_KeyHandleEntries_IsEvictSpace(2), this key counted
            raise TpmError("TPM_NOSPACE", "two key slots must stay free of owner-evict keys")
        if key.blob.flags & C.TPM_KEY_FLAG_VOLATILE or _parent_pcr_bound(tpm, key.parent):
            raise TpmError("TPM_BAD_PARAMETER", "a volatile key or one under a PCR-bound parent")
        if len(evict) >= OWNER_EVICT_SLOTS:
            raise TpmError("TPM_NOSPACE", f"all {OWNER_EVICT_SLOTS} owner-evict slots are in use")
    set_owner_evict(tpm, handle, bool(bit_value))
    return Response()


def _parent_pcr_bound(tpm, parent: int | None) -> bool:
    """parentPCRStatus: the key was loaded under a parent bound to PCRs (the SRK never is)."""
    loaded = tpm.keys.get(parent) if parent is not None else None
    return bool(loaded is not None and loaded.blob.pcr_info)
