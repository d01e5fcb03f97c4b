"""The control plane's policy: what a client may do to a shared TPM through port P+1.

A served TPM is shared, so no client may leave it unusable for the others.
What *power cycle* means here, for both generations and both protocols:

- A power cycle is real: the TPM is re-initialised (swtpm's ``CMD_INIT``,
  the TPM 1.2 engine's power-down and power-up; transient objects, sessions
  and PCRs are gone) and then, unless serve runs with ``--startup none``,
  gets the ``TPM(2)_Startup(CLEAR)`` a BIOS sends. A client's own Startup
  afterwards answers ``TPM_RC_INITIALIZE`` (TPM 1.2: ``TPM_INVALID_POSTINIT``),
  as on a booted machine.
- A shared TPM is never left off: swtpm's ``CMD_SHUTDOWN`` and ``CMD_STOP``
  are refused (for TPM 1.2 too), and the MS simulator's
  ``TPM_SIGNAL_POWER_OFF`` *is* the power cycle (power off, on, Startup),
  after which ``TPM_SIGNAL_POWER_ON`` is what it is on a powered simulator, a
  no-op (the simulator's ``_rpc__Signal_PowerOn`` returns when already on;
  tcti-mssim sends it at every initialisation).
- What cannot be done is refused, never acknowledged and ignored: ``NV_OFF``
  (swtpm's NV is always available), physical presence, ``RESTART``; and
  ``CMD_INIT`` where the backend has no control channel (a device node).

``CMD_SET_BUFFERSIZE`` answers what serve enforces (:func:`buffersize_reply`), and
``CMD_GET_CAPABILITY`` advertises only what a client may use (:func:`capabilities_reply`).

swtpm's allowed control codes are :data:`trustlab.serving.wire.ALLOWED_CONTROL`.
"""

from __future__ import annotations

import struct

from trustlab.serving import wire

ACK = "ack"
CYCLE = "cycle"
REFUSE = "refuse"

MS_SIGNALS = {
    wire.MS_SIGNAL_POWER_ON: ACK,      # already on: a no-op, as in the simulator
    wire.MS_SIGNAL_POWER_OFF: CYCLE,   # off, on and Startup at once: never left off
    wire.MS_SIGNAL_RESET: CYCLE,
    wire.MS_SIGNAL_NV_ON: ACK,         # NV is on
    wire.MS_SIGNAL_CANCEL_ON: ACK,     # commands run to completion: nothing to cancel
    wire.MS_SIGNAL_CANCEL_OFF: ACK,
}
"""MS-simulator platform signal -> what serve does; any other signal is refused."""

MS_NAMES = {
    wire.MS_SIGNAL_POWER_ON: "TPM_SIGNAL_POWER_ON", wire.MS_SIGNAL_POWER_OFF: "TPM_SIGNAL_POWER_OFF",
    wire.MS_SIGNAL_PHYS_PRES_ON: "TPM_SIGNAL_PHYS_PRES_ON", wire.MS_SIGNAL_PHYS_PRES_OFF: "TPM_SIGNAL_PHYS_PRES_OFF",
    wire.MS_SIGNAL_CANCEL_ON: "TPM_SIGNAL_CANCEL_ON", wire.MS_SIGNAL_CANCEL_OFF: "TPM_SIGNAL_CANCEL_OFF",
    wire.MS_SIGNAL_NV_ON: "TPM_SIGNAL_NV_ON", wire.MS_SIGNAL_NV_OFF: "TPM_SIGNAL_NV_OFF",
    wire.MS_SIGNAL_RESET: "TPM_SIGNAL_RESET", wire.MS_SIGNAL_RESTART: "TPM_SIGNAL_RESTART",
}
MS_OK = b"\0\0\0\0"
MS_REFUSED = b"\0\0\0\1"
"""The platform port's 4-byte answer: 0 done; non-zero refused (tcti-mssim reports it as an I/O error)."""


def ms_signal_action(code: int) -> str:
    return MS_SIGNALS.get(code, REFUSE)


def ms_signal_name(code: int) -> str:
    return MS_NAMES.get(code, f"platform signal {code}")


def buffersize_reply(payload: bytes, reply: bytes, cap: int | None) -> bytes:
    """swtpm's ``CMD_SET_BUFFERSIZE`` answer with the profile's frame cap in place of libtpms' maximum.

    ``payload``: the request's ``u32 buffersize`` (0 = query); ``reply``: swtpm's
    answer, ``u32 result, buffersize, minsize, maxsize``; ``cap``: the buffer the
    profile's chip reports and serve enforces (:attr:`.tpm2.limits.FrameLimits.control_buffer`),
    None to leave swtpm's answer as it is. swtpm (ctrlchannel.c) refuses a set while
    the TPM runs - TPM_BAD_ORDINAL, 4 bytes - and serve's TPM always runs, so such a
    refusal passes through unchanged. What changes is a successful answer: the maximum
    becomes ``cap``; a query reports ``cap`` where libtpms reports its own maximum (its
    default), a set reports the request clamped to ``[minsize, cap]``, as libtpms
    clamps it to its own range.
    """
    if cap is None or len(reply) != 16 or len(payload) < 4:
        return reply
    result, size, minsize, maxsize = struct.unpack(">IIII", reply)
    if result != 0:
        return reply
    wanted = struct.unpack(">I", payload[:4])[0]
    if wanted == 0:
        size = cap if size == maxsize else size
    else:
        size = min(max(wanted, minsize), cap)
    return struct.pack(">IIII", result, size, minsize, cap)


PTM_CAP_BITS = {
    wire.CMD_INIT: 1 << 0, wire.CMD_SHUTDOWN: 1 << 1, wire.CMD_GET_TPMESTABLISHED: 1 << 2,
    wire.CMD_SET_LOCALITY: 1 << 3, wire.CMD_HASH_START: 1 << 4, wire.CMD_CANCEL_TPM_CMD: 1 << 5,
    wire.CMD_STORE_VOLATILE: 1 << 6, wire.CMD_RESET_TPMESTABLISHED: 1 << 7, wire.CMD_GET_STATEBLOB: 1 << 8,
    wire.CMD_SET_STATEBLOB: 1 << 9, wire.CMD_STOP: 1 << 10, wire.CMD_GET_CONFIG: 1 << 11,
    wire.CMD_SET_DATAFD: 1 << 12, wire.CMD_SET_BUFFERSIZE: 1 << 13, wire.CMD_GET_INFO: 1 << 14,
}
"""swtpm's PTM_CAP_* bit (tpm_ioctl.h) for each control code (PTM_CAP_HASHING covers the DRTM sequence)."""


def capabilities_reply(reply: bytes, allowed: frozenset[int]) -> bytes:
    """``CMD_GET_CAPABILITY``'s ``u64`` with the bits of the codes serve refuses cleared.

    A TPM behind serve is shared, so ``CMD_SHUTDOWN``, ``CMD_STOP``, the state blobs and the rest are
    refused (:data:`wire.ALLOWED_CONTROL`); advertising them would send a client such as ``swtpm_ioctl``
    or QEMU down a path that then fails. Bits of no control code (e.g. PTM_CAP_SEND_COMMAND_HEADER, a
    data-channel feature) and of the allowed codes are the backend's, unchanged.
    """
    if len(reply) != 8:
        return reply
    caps = struct.unpack(">Q", reply)[0]
    for code, bit in PTM_CAP_BITS.items():
        if code not in allowed:
            caps &= ~bit
    return struct.pack(">Q", caps)
