"""Owner-evict keys (TPM_KEY_CONTROL_OWNER_EVICT, Part 2, 5.19; Part 3, 21.1): loaded keys kept in NV.

The owner marks a loaded key owner-evict with TPM_KeyControlOwner; from then on the key keeps its
slot and its handle through every TPM_Startup, and only the owner can let it go (clear the bit, then
TPM_FlushSpecific). As libtpms: the keys are stored with the permanent data (here the persistent
state's ``extra``), reloaded at power-up, and deleted by an owner clear.
"""

from __future__ import annotations

import json

from trustlab.devices.tpm12.keys import LoadedKey, key_from_json, key_to_json

# PersistentState.extra key: {"<handle>": key_to_json(...)} of the owner-evict keys
OWNER_EVICT = "owner_evict"
# owner-evict slots: libtpms' TPM_OWNER_EVICT_KEY_HANDLES as built (src/tpm_library_conf.h: 10, beside
# 20 key slots; tpm_structures.h's fallback is 1). The specification sets no minimum, only that two
# slots stay free for ordinary keys.
OWNER_EVICT_SLOTS = 10


def evict_handles(tpm) -> set[int]:
    """The handles of the loaded keys that are owner-evict."""
    return {int(h) for h in json.loads(tpm.state.extra.get(OWNER_EVICT, "{}"))}


def is_owner_evict(tpm, handle: int) -> bool:
    return handle in evict_handles(tpm)


def stored_keys(state) -> dict[int, LoadedKey]:
    """The owner-evict keys as stored, by handle: what TPM_Init puts back into the key slots."""
    table = state.extra.get(OWNER_EVICT)
    if table is None:  # (none stored: every TPM_Init of a TPM without owner-evict keys, without a parse)
        return {}
    return {int(h): key_from_json(doc) for h, doc in json.loads(table).items()}


def set_owner_evict(tpm, handle: int, value: bool) -> None:
    """Set or clear the bit of a loaded key and write the change to NV (only when it changes)."""
    table = json.loads(tpm.state.extra.get(OWNER_EVICT, "{}"))
    if value:
        table[str(handle)] = key_to_json(tpm.keys[handle])
    else:
        table.pop(str(handle), None)
    if table:
        tpm.state.extra[OWNER_EVICT] = json.dumps(table, sort_keys=True)
    else:
        tpm.state.extra.pop(OWNER_EVICT, None)
    tpm.mark_dirty()


def forget_all(tpm) -> None:
    """TPM_OwnerClear (libtpms TPM_OwnerClearCommon): the owner-evict keys are deleted too."""
    for handle in evict_handles(tpm):
        tpm.keys.pop(handle, None)
    if tpm.state.extra.pop(OWNER_EVICT, None) is not None:
        tpm.mark_dirty()
