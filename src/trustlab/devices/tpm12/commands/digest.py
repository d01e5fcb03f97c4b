"""The TPM's own SHA-1 thread and its entropy input (Part 3, 13.1-13.4 and 13.7).

TPM_SHA1Start opens one hashing thread; TPM_SHA1Update feeds it whole 64-byte
blocks; TPM_SHA1Complete ends it with the last (at most 64) bytes, and
TPM_SHA1CompleteExtend also extends a PCR with the result (what a DRTM
measures with). Any other command ends the thread (the dispatcher drops it,
as libtpms' ``TPM_Check_SHA1Context``). Each block hashed is charged as
``sha1_byte`` like every other hash the TPM computes.

TPM_StirRandom adds caller entropy to the RNG state; the engine's RNG is the
host's CSPRNG, which needs none, so the data is checked and dropped.
"""

from __future__ import annotations

import hashlib

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.pc_client import PCR_EXTEND_LOCAL
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

MAX_NUM_BYTES = C.TPM_BUFFER_MAX - 64  # libtpms TPM_SHA1_MAXNUMBYTES (a compile-time constant there too)


@tpm_command("TPM_SHA1Start")
def sha1_start(tpm, req: Request) -> Response:
    req.params.end()
    tpm.sha1_context = hashlib.sha1()
    return Response(Writer().u32(MAX_NUM_BYTES).bytes())


def _thread(tpm):
    if tpm.sha1_context is None:
        raise TpmError("TPM_SHA_THREAD", "no SHA-1 thread (TPM_SHA1Start first)")
    return tpm.sha1_context


@tpm_command("TPM_SHA1Update")
def sha1_update(tpm, req: Request) -> Response:
    data = req.params.sized(1 << 16)
    req.params.end()
    thread = _thread(tpm)
    if len(data) % 64 or len(data) > MAX_NUM_BYTES:
        tpm.sha1_context = None  # step 2.b/3.b: the thread ends
        raise TpmError("TPM_SHA_ERROR", f"numBytes {len(data)}: whole 64-byte blocks, at most {MAX_NUM_BYTES}")
    thread.update(data)
    tpm.crypto.charge_hash_blocks(len(data) // 64)
    return Response()


def _complete(tpm, data: bytes) -> bytes:
    thread = _thread(tpm)
    tpm.sha1_context = None
    if len(data) > 64:
        raise TpmError("TPM_SHA_ERROR", f"hashData of {len(data)} bytes (at most 64)")
    thread.update(data)
    tpm.crypto.charge_hash_blocks((len(data) + 9 + 63) // 64)  # the last data and SHA-1's padding
    return thread.digest()


@tpm_command("TPM_SHA1Complete")
def sha1_complete(tpm, req: Request) -> Response:
    data = req.params.sized(1 << 16)
    req.params.end()
    return Response(_complete(tpm, data))


@tpm_command("TPM_SHA1CompleteExtend")
def sha1_complete_extend(tpm, req: Request) -> Response:
    index, data = req.params.u32(), req.params.sized(1 << 16)
    req.params.end()
    if index >= C.NUM_PCRS:
        raise TpmError("TPM_BADINDEX", f"PCR {index} (the TPM has {C.NUM_PCRS})")
    if not PCR_EXTEND_LOCAL[index] & (1 << tpm.locality):
        raise TpmError("TPM_BAD_LOCALITY", f"PCR {index} cannot be extended from locality {tpm.locality}")
    digest = _complete(tpm, data)
    tpm.pcrs[index] = tpm.crypto.sha1(tpm.pcrs[index], digest)
    return Response(digest + tpm.pcrs[index])


@tpm_command("TPM_StirRandom")
def stir_random(tpm, req: Request) -> Response:
    req.params.sized(1 << 16)
    req.params.end()
    # Part 3, 13.7 step 1: 256 bytes or more MAY be refused; libtpms takes them
    return Response()
