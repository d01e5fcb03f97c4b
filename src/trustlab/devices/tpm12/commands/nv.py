"""Non-volatile storage: TPM_NV_DefineSpace, NV_WriteValue(Auth), NV_ReadValue(Auth) (Part 3, 20).

An NV area is a TPM_NV_DATA_PUBLIC (Part 2, 19.3: index, PCR restrictions,
TPM_NV_ATTRIBUTES, the per-boot lock bits, dataSize) plus its authorization
value and data, kept in the engine's persistent state. As the specification
says, while ``nvLocked`` (TPM_PERMANENT_FLAGS) is FALSE - a TPM fresh from
manufacturing - no NV authorization is checked, and only 64 writes may happen
without an owner (TPM_MAXNVWRITES); defining the index TPM_NV_INDEX_LOCK sets
it. Once locked, an area's PCR and locality restrictions (TPM_PCR_INFO_SHORT
for reading and for writing) are enforced. Writes charge ``nvm_write_byte`` when the
profile has it (the 2010 profiles do not).
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.nvareas import MAX_TOTAL, NVArea, areas, first_free_slot, nv_locked, place, release, save
from trustlab.devices.tpm12.pcrs import pcr_composite, raw_selection
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Reader, Writer

MAX_AREA = MAX_TOTAL  # one area: libtpms limits only the total (it accepts 4096 bytes, tpm_nvdefine -s 4096)
MAX_WRITES_NO_OWNER = 64  # Part 3, 20.2: TPM_MAX_NV_WRITE_NOOWNER
_VALID_ATTRS = (C.TPM_NV_PER_READ_STCLEAR | C.TPM_NV_PER_AUTHREAD | C.TPM_NV_PER_OWNERREAD | C.TPM_NV_PER_PPREAD
                | C.TPM_NV_PER_GLOBALLOCK | C.TPM_NV_PER_WRITE_STCLEAR | C.TPM_NV_PER_WRITEDEFINE
                | C.TPM_NV_PER_WRITEALL | C.TPM_NV_PER_AUTHWRITE | C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_PPWRITE)


def pcr_info_short(r: Reader) -> bytes:
    """TPM_PCR_INFO_SHORT: sizeOfSelect, pcrSelect, localityAtRelease, digestAtRelease."""
    start = r.pos
    raw_selection(r)
    r.u8()
    r.raw(20)
    return r._data[start:r.pos]


def _count_unowned_write(tpm) -> None:
    if tpm.state.owner_auth is not None:
        return
    n = int(tpm.state.extra.get("nv_writes", "0")) + 1
    if n > MAX_WRITES_NO_OWNER:
        raise TpmError("TPM_MAXNVWRITES", f"more than {MAX_WRITES_NO_OWNER} NV writes without an owner")
    tpm.state.extra["nv_writes"] = str(n)


def _area(tpm, index: int) -> NVArea:
    a = areas(tpm).get(index)
    if a is None:
        raise TpmError("TPM_BADINDEX", f"no NV area {index:#010x}")
    return a


def _owner(tpm, req: Request) -> None:
    req.auth.session(0)  # an unknown session handle first (TPM_INVALID_AUTHHANDLE), then no owner (libtpms)
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))


@tpm_command("TPM_NV_DefineSpace", auth=(0, 1))
def nv_define_space(tpm, req: Request) -> Response:
    p = req.params
    if p.u16() != C.TPM_TAG_NV_DATA_PUBLIC:
        raise TpmError("TPM_BAD_PARAMETER", "pubInfo is not a TPM_NV_DATA_PUBLIC")
    index = p.u32()
    pcr_read, pcr_write = pcr_info_short(p), pcr_info_short(p)
    if p.u16() != C.TPM_TAG_NV_ATTRIBUTES:
        raise TpmError("TPM_BAD_PARAMETER", "permission is not a TPM_NV_ATTRIBUTES")
    attributes = p.u32()
    p.u8(), p.u8(), p.u8()  # bReadSTClear, bWriteSTClear, bWriteDefine: ignored on input
    size = p.u32()
    enc_auth = p.raw(20)
    p.end()
    if index == C.TPM_NV_INDEX_LOCK and not len(req.auth):  # Part 3, 20.1 step 1
        if size:
            raise TpmError("TPM_BADINDEX", "TPM_NV_INDEX_LOCK is defined with dataSize 0")
        tpm.state.extra["nv_locked"] = "1"
        tpm.mark_dirty()
        return Response()
    locked = nv_locked(tpm)
    if index == C.TPM_NV_INDEX0:
        raise TpmError("TPM_BADINDEX", "index 0 is reserved")
    if locked and index & C.TPM_NV_INDEX_D_BIT:
        raise TpmError("TPM_BADINDEX", "the D bit marks a manufacturer's index")
    if len(req.auth):
        _owner(tpm, req)
        auth = req.auth.decrypt_auth(0, enc_auth)
    else:
        if locked:
            raise TpmError("TPM_BAD_PRESENCE", "defining NV without the owner needs physical presence")
        _count_unowned_write(tpm)
        auth = enc_auth
    table = areas(tpm)
    slot = first_free_slot(tpm)
    old = table.get(index)
    if old is not None and locked:
        if old.attributes & C.TPM_NV_PER_GLOBALLOCK and tpm.global_lock:
            raise TpmError("TPM_AREA_LOCKED", "the area is locked until the next TPM_Startup")
        if old.attributes & C.TPM_NV_PER_WRITE_STCLEAR and ("w", index) in tpm.nv_stclear_locks:
            raise TpmError("TPM_AREA_LOCKED", "the area is write-locked until the next TPM_Startup")
    if old is not None:
        release(tpm, table, index)
        if size == 0:  # step 6.e: dataSize 0 deletes the area
            save(tpm, table)
            return Response()
    if attributes & C.TPM_NV_PER_OWNERWRITE and attributes & C.TPM_NV_PER_AUTHWRITE:
        raise TpmError("TPM_AUTH_CONFLICT", "OWNERWRITE and AUTHWRITE together")
    if attributes & C.TPM_NV_PER_OWNERREAD and attributes & C.TPM_NV_PER_AUTHREAD:
        raise TpmError("TPM_AUTH_CONFLICT", "OWNERREAD and AUTHREAD together")
    if not attributes & (C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_AUTHWRITE | C.TPM_NV_PER_WRITEDEFINE
                         | C.TPM_NV_PER_PPWRITE):
        raise TpmError("TPM_PER_NOWRITE", "the area could never be written")
    if index & C.TPM_NV_INDEX_RESVD or attributes & ~_VALID_ATTRS:
        raise TpmError("TPM_BADINDEX", f"reserved bits in index {index:#010x} or its attributes")
    if size == 0:
        raise TpmError("TPM_BAD_PARAM_SIZE", "a new area needs dataSize > 0", parsed=True)
    if size + sum(a.size for a in table.values()) > MAX_TOTAL:
        raise TpmError("TPM_NOSPACE", f"no room for {size} bytes of NV")
    place(tpm, table, NVArea(index, pcr_read, pcr_write, attributes, size, auth, bytearray(b"\xff" * size)), slot)
    tpm.crypto.optional("nvm_write_byte", size)
    save(tpm, table)
    return Response()


def _check_pcr_info(tpm, info: bytes) -> None:
    """TPM_PCR_INFO_SHORT restrictions (Part 3, 20.2 step 7 / 20.4 step 6): the locality must be
    one of localityAtRelease, and the selected PCRs must have digestAtRelease."""
    r = Reader(info, "TPM_PCR_INFO_SHORT")
    size = r.u16()
    select, locality, release = r.raw(size), r.u8(), r.raw(20)
    if not locality & (1 << tpm.locality):
        raise TpmError("TPM_BAD_LOCALITY", f"the area is not accessible from locality {tpm.locality}")
    indices = [i for i in range(8 * size) if select[i // 8] >> (i % 8) & 1]
    if indices and tpm.crypto.sha1(pcr_composite(tpm, indices, size)) != release:
        raise TpmError("TPM_WRONGPCRVAL", "the PCRs are not in the state the area requires")


def _authorize(tpm, req: Request, a: NVArea, index: int, owner_session: bool, area_session: bool, locked: bool,
               verb: str) -> None:
    """Part 3, 20.2 / 20.4: who may write (``verb`` "written") or read ("read") the area, then its PCRs.

    The area's own authorization, the owner's, or none, as its PER_AUTH* / PER_OWNER* attributes
    say. Before nvLocked (an unowned TPM in manufacture, or an owner who never locked NV) the
    owner's PER_OWNER* and the PCRs are not checked, but PER_AUTH* still is (Part 3, 20.2 step 1.b,
    20.4 step 1.b), and an owner's session on an area without PER_OWNER* is a conflict whatever
    nvLocked (20.2/20.4 step 4.a), as in libtpms' TPM_Process_NVWriteValue / NVReadValue (the TSS 1.2
    testsuite's Tspi_NV_ReadValue01 / Tspi_NV_WriteValue01 read and write an AUTH* area without one).
    """
    per_auth, per_owner, pcr = ((C.TPM_NV_PER_AUTHWRITE, C.TPM_NV_PER_OWNERWRITE, a.pcr_write) if verb == "written"
                                else (C.TPM_NV_PER_AUTHREAD, C.TPM_NV_PER_OWNERREAD, a.pcr_read))
    if area_session:
        if not a.attributes & per_auth:
            raise TpmError("TPM_AUTH_CONFLICT", f"the area is not {verb} with its own authorization")
        req.auth.check(0, a.auth, (C.TPM_ET_NV, index))
    elif owner_session:
        if not a.attributes & per_owner:
            raise TpmError("TPM_AUTH_CONFLICT", f"the area is not {verb} with the owner's authorization")
    else:
        if a.attributes & per_auth:
            raise TpmError("TPM_AUTH_CONFLICT", f"the area is {verb} with its own authorization")
        if locked and a.attributes & per_owner:
            raise TpmError("TPM_AUTH_CONFLICT", f"the area needs the owner's authorization to be {verb}")
    if locked or area_session:
        _check_pcr_info(tpm, pcr)


def _write(tpm, req: Request, owner_session: bool, area_session: bool) -> Response:
    p = req.params
    index, offset, data = p.u32(), p.u32(), p.sized(MAX_AREA + 1)
    p.end()
    locked = nv_locked(tpm)
    a = _area(tpm, index) if index != C.TPM_NV_INDEX0 else None  # step 2, before the owner's session
    if owner_session:
        _owner(tpm, req)
    if a is None:  # Part 3, 20.2 step 3: a zero-length write to index 0 sets bGlobalLock
        if data:
            raise TpmError("TPM_BADINDEX", "index 0 takes only a zero-length write")
        tpm.global_lock = True
        return Response()
    _authorize(tpm, req, a, index, owner_session, area_session, locked, "written")
    if locked or area_session:
        if a.attributes & C.TPM_NV_PER_WRITEDEFINE and a.write_define:
            raise TpmError("TPM_AREA_LOCKED", "the area was locked by a zero-length write")
        if a.attributes & C.TPM_NV_PER_WRITE_STCLEAR and ("w", index) in tpm.nv_stclear_locks:
            raise TpmError("TPM_AREA_LOCKED", "the area is write-locked until the next TPM_Startup")
        if a.attributes & C.TPM_NV_PER_GLOBALLOCK and tpm.global_lock:
            raise TpmError("TPM_AREA_LOCKED", "bGlobalLock is set")
    table = areas(tpm)
    if not data:  # step 14: a zero-length write sets bWriteSTClear and bWriteDefine whatever the
        # attributes and nvLocked (libtpms TPM_Process_NVWriteValue); only the attributes make them lock
        if not a.write_define:
            a.write_define = True
            save(tpm, table)
        tpm.nv_stclear_locks.add(("w", index))
        return Response()
    if offset + len(data) > a.size:
        raise TpmError("TPM_NOSPACE", f"{len(data)} bytes at offset {offset} overrun the {a.size}-byte area")
    if a.attributes & C.TPM_NV_PER_WRITEALL and len(data) != a.size:
        raise TpmError("TPM_NOT_FULLWRITE", "the area must be written whole")
    if not locked:
        _count_unowned_write(tpm)
    a.data[offset:offset + len(data)] = data
    tpm.crypto.optional("nvm_write_byte", len(data))
    save(tpm, table)
    return Response()


def _read(tpm, req: Request, owner_session: bool, area_session: bool) -> Response:
    p = req.params
    index, offset, size = p.u32(), p.u32(), p.u32()
    p.end()
    locked = nv_locked(tpm)
    a = _area(tpm, index)  # Part 3, 20.4 step 2, before the owner's session
    if owner_session:
        _owner(tpm, req)
    _authorize(tpm, req, a, index, owner_session, area_session, locked, "read")
    if a.attributes & C.TPM_NV_PER_READ_STCLEAR and ("r", index) in tpm.nv_stclear_locks:
        raise TpmError("TPM_DISABLED_CMD", "the area is read-locked until the next TPM_Startup")
    if size == 0:  # sets bReadSTClear whatever the attributes (libtpms TPM_Process_NVReadValue)
        tpm.nv_stclear_locks.add(("r", index))
        return Response(params=Writer().sized(b"").bytes())
    if offset + size > a.size:
        raise TpmError("TPM_NOSPACE", f"{size} bytes at offset {offset} overrun the {a.size}-byte area")
    return Response(params=Writer().sized(bytes(a.data[offset:offset + size])).bytes())


@tpm_command("TPM_NV_WriteValue", auth=(0, 1))
def nv_write_value(tpm, req: Request) -> Response:
    return _write(tpm, req, owner_session=bool(len(req.auth)), area_session=False)


@tpm_command("TPM_NV_WriteValueAuth", auth=(1,))
def nv_write_value_auth(tpm, req: Request) -> Response:
    return _write(tpm, req, owner_session=False, area_session=True)


@tpm_command("TPM_NV_ReadValue", auth=(0, 1))
def nv_read_value(tpm, req: Request) -> Response:
    return _read(tpm, req, owner_session=bool(len(req.auth)), area_session=False)


@tpm_command("TPM_NV_ReadValueAuth", auth=(1,))
def nv_read_value_auth(tpm, req: Request) -> Response:
    return _read(tpm, req, owner_session=False, area_session=True)
