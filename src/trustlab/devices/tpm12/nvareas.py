"""NV areas as the engine keeps them (Part 2, 19.3): the table every NV user reads.

TPM_NV_* (``commands/nv.py``), OSAP on an NV index (``commands/auth.py``),
TPM_GetCapability and TPM_OwnerClear all see the same table; it lives here,
below all of them, so none imports another command module for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.wire import Writer

NV_KEY = "nv"  # PersistentState.extra key
MAX_TOTAL = 0x6FFA  # all areas together (what libtpms reports as TPM_CAP_PROP_MAX_NV_AVAILABLE)


@dataclass
class NVArea:
    index: int
    pcr_read: bytes  # TPM_PCR_INFO_SHORT, as defined
    pcr_write: bytes
    attributes: int
    size: int
    auth: bytes
    data: bytearray
    write_define: bool = False  # bWriteDefine (persistent)

    def public(self, read_stclear: bool = False, write_stclear: bool = False) -> bytes:
        """TPM_NV_DATA_PUBLIC (Part 2, 19.3)."""
        return (Writer().u16(C.TPM_TAG_NV_DATA_PUBLIC).u32(self.index).raw(self.pcr_read).raw(self.pcr_write)
                .u16(C.TPM_TAG_NV_ATTRIBUTES).u32(self.attributes).u8(read_stclear).u8(write_stclear)
                .u8(self.write_define).u32(self.size).bytes())


def areas(tpm) -> dict[int, NVArea]:
    """The defined NV areas (decoded once per engine, written back by :func:`save`)."""
    cached = getattr(tpm, "_nv_areas", None)
    if cached is not None and cached[0] is tpm.state:
        return cached[1]
    raw = json.loads(tpm.state.extra.get(NV_KEY, "{}"))
    table = {int(k): NVArea(int(k), bytes.fromhex(v["r"]), bytes.fromhex(v["w"]), v["a"], v["n"],
                            bytes.fromhex(v["auth"]), bytearray.fromhex(v["d"]), v["wd"])
             for k, v in raw.items()}
    tpm._nv_areas = (tpm.state, table, set())
    return table


def _free_slots(tpm) -> set[int]:
    """Slots of released areas not yet reused (libtpms' TPM_NV_INDEX_ENTRIES entries marked
    TPM_NV_INDEX_LOCK). They live only until the table is next decoded: libtpms stores the used
    entries alone (TPM_NVIndexEntries_Store), so a power cycle or restart closes the gaps."""
    areas(tpm)
    return tpm._nv_areas[2]


def release(tpm, table: dict[int, NVArea], index: int) -> None:
    """Delete an area, leaving its slot free for the next definition: TPM_GetCapability's
    TPM_CAP_NV_LIST lists the areas in slot order, as libtpms does (found by tpm_nvinfo -n)."""
    free = _free_slots(tpm)
    slot = list(table).index(index)
    for hole in sorted(free):
        if hole <= slot:
            slot += 1
    free.add(slot)
    del table[index]
    for lock in (("r", index), ("w", index)):  # a new area's bReadSTClear/bWriteSTClear start FALSE
        tpm.nv_stclear_locks.discard(lock)


def first_free_slot(tpm) -> int | None:
    """The slot a new definition will take (None: a new one at the end). libtpms takes it
    (TPM_NVIndexEntries_GetFreeEntry) before it deletes an area being redefined, so a redefined
    area moves to the end when no earlier slot is free."""
    free = _free_slots(tpm)
    return min(free) if free else None


def place(tpm, table: dict[int, NVArea], area: NVArea, slot: int | None) -> None:
    """Add a new area in ``slot`` (from :func:`first_free_slot`), else at the end."""
    if slot is None:
        table[area.index] = area
        return
    free = _free_slots(tpm)
    free.discard(slot)
    items = list(table.items())
    items.insert(slot - sum(1 for hole in free if hole < slot), (area.index, area))
    table.clear()
    table.update(items)


def save(tpm, table: dict[int, NVArea]) -> None:
    tpm.state.extra[NV_KEY] = json.dumps({str(a.index): {
        "r": a.pcr_read.hex(), "w": a.pcr_write.hex(), "a": a.attributes, "n": a.size, "auth": a.auth.hex(),
        "d": a.data.hex(), "wd": a.write_define} for a in table.values()})  # in slot order, not sorted
    tpm.mark_dirty()


def nv_locked(tpm) -> bool:
    return tpm.state.extra.get("nv_locked") == "1"
