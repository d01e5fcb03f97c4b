"""Which key sits behind which handle, read off the wire.

A TPM 2.0 command names its key only by handle, yet ``TPM2_Sign`` costs an
RSA-2048 or a P-256 signature depending on that key. Like a resource manager,
the proxy watches object-creating commands (CreatePrimary, Load,
LoadExternal, CreateLoaded, ContextLoad) and remembers the algorithm of each
returned handle, and forgets it on FlushContext / Startup(CLEAR).

Parsing here is deliberately forgiving: anything it cannot read yields
``None`` (the command is then timed as overhead + bytes), never an exception.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from trustlab.devices.tpm2.commands import (
    TPM_ALG_ECC,
    TPM_ALG_KEYEDHASH,
    TPM_ALG_NULL,
    TPM_ALG_RSA,
    TPM_ALG_SYMCIPHER,
    TPM_ST_SESSIONS,
)
from trustlab.devices.tpm2.wire import HEADER_SIZE

# command code -> number of handles in the command's handle area (Part 3)
COMMAND_HANDLES = {
    0x131: 1, 0x153: 1, 0x157: 1, 0x167: 0, 0x191: 1, 0x15D: 1, 0x177: 1, 0x174: 1, 0x159: 1,
    0x163: 1, 0x154: 1, 0x158: 1, 0x148: 2, 0x14A: 2, 0x14C: 3, 0x184: 3, 0x165: 0, 0x120: 2,
    0x17D: 0, 0x155: 1, 0x15B: 1, 0x186: 0, 0x15C: 1, 0x13E: 1, 0x185: 2, 0x137: 2, 0x134: 2,
    0x136: 2, 0x135: 2, 0x14E: 2, 0x12A: 1, 0x122: 2, 0x176: 2, 0x15E: 1, 0x17B: 0, 0x17F: 1,
    0x161: 0, 0x162: 1, 0x173: 1, 0x144: 0, 0x16B: 1, 0x14B: 2, 0x156: 1, 0x147: 2, 0x193: 1,
    0x164: 1, 0x182: 1, 0x17E: 0, 0x17A: 0, 0x151: 2, 0x160: 2, 0x169: 1,
}
# response code -> number of handles in the response's handle area
RESPONSE_HANDLES = {0x131: 1, 0x157: 1, 0x167: 1, 0x191: 1, 0x161: 1, 0x176: 1, 0x15B: 1, 0x186: 1}

CURVES = {0x0001: "ecc192", 0x0002: "ecc224", 0x0003: "ecc256", 0x0004: "ecc384", 0x0005: "ecc521",
          0x0010: "eccbn256", 0x0011: "eccbn638", 0x0020: "eccsm2"}


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def u16(self) -> int:
        if self.pos + 2 > len(self.data):
            raise ValueError("short")
        (v,) = struct.unpack_from(">H", self.data, self.pos)
        self.pos += 2
        return v

    def u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise ValueError("short")
        (v,) = struct.unpack_from(">I", self.data, self.pos)
        self.pos += 4
        return v

    def tpm2b(self) -> bytes:
        n = self.u16()
        if self.pos + n > len(self.data):
            raise ValueError("short")
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return v


def key_variant(public: bytes) -> str | None:
    """``rsa2048``, ``ecc256``, ``keyedhash``, ``symcipher`` for a TPMT_PUBLIC."""
    try:
        r = _Reader(public)
        kind = r.u16()
        r.u16()  # nameAlg
        r.u32()  # objectAttributes
        r.tpm2b()  # authPolicy
        if kind == TPM_ALG_KEYEDHASH:
            return "keyedhash"
        if kind == TPM_ALG_SYMCIPHER:
            return "symcipher"
        if kind in PQC_TYPES:
            return _pqc_variant(kind, r)
        if kind not in (TPM_ALG_RSA, TPM_ALG_ECC):
            return None
        if r.u16() != TPM_ALG_NULL:  # symmetric: keyBits, mode
            r.u16(), r.u16()
        scheme = r.u16()
        if scheme != TPM_ALG_NULL:
            r.u16()
            if scheme == 0x001A:  # ECDAA carries a count
                r.u16()
        if kind == TPM_ALG_RSA:
            return f"rsa{r.u16()}"
        return CURVES.get(r.u16(), "ecc")
    except ValueError:
        return None


PQC_TYPES = (0x00A0, 0x00A1, 0x00A2)
"""TPM_ALG_MLKEM, TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA (TPM 2.0 Library 1.85, Part 2)."""
PQC_PARAMETER_SETS = {"mldsa": {1: "mldsa44", 2: "mldsa65", 3: "mldsa87"},
                      "mlkem": {1: "mlkem512", 2: "mlkem768", 3: "mlkem1024"}}
"""TPMI_MLDSA_PARAMETER_SET / TPMI_MLKEM_PARAMETER_SET values (Part 2) as the PQC handlers name the key in the
trace (``devices/tpm2/pqc/keys.py``'s ParameterSet.variant; a test holds the two equal). Here, not imported
from there: the handlers import this module."""


def _pqc_variant(kind: int, r: "_Reader") -> str | None:
    """``mldsa65``, ``mlkem768`` ...: the parameter set of a 1.85 key, so that the handles of post-quantum keys
    are known like RSA/ECC ones."""
    if kind == 0x00A0:  # TPMS_MLKEM_PARMS: symmetric (algorithm [, keyBits, mode]), parameterSet
        if r.u16() != TPM_ALG_NULL:
            r.u16(), r.u16()
        return PQC_PARAMETER_SETS["mlkem"].get(r.u16())
    return PQC_PARAMETER_SETS["mldsa"].get(r.u16())  # ML-DSA and HashML-DSA: parameterSet first


def parameter_offset(command: bytes, n_handles: int) -> int:
    """Where a command's parameters start (after handles and the auth area)."""
    pos = HEADER_SIZE + 4 * n_handles
    if struct.unpack_from(">H", command, 0)[0] == TPM_ST_SESSIONS:
        if pos + 4 > len(command):
            raise ValueError("short")
        (auth_size,) = struct.unpack_from(">I", command, pos)
        pos += 4 + auth_size
    if pos > len(command):
        raise ValueError("short")
    return pos


def handles(command: bytes, n: int) -> list[int]:
    if len(command) < HEADER_SIZE + 4 * n:
        raise ValueError("short")
    return [struct.unpack_from(">I", command, HEADER_SIZE + 4 * i)[0] for i in range(n)]


def parameters(command: bytes, code: int) -> _Reader | None:
    n = COMMAND_HANDLES.get(code)
    if n is None:
        return None
    try:
        return _Reader(command, parameter_offset(command, n))
    except (ValueError, struct.error):
        return None


def template_variant(command: bytes, code: int) -> str | None:
    """Algorithm of the object a Create/CreatePrimary/Load/LoadExternal/CreateLoaded makes."""
    r = parameters(command, code)
    if r is None:
        return None
    try:
        r.tpm2b()  # inSensitive (create) or inPrivate (load)
        return key_variant(r.tpm2b())
    except ValueError:
        return None


def response_handle(response: bytes) -> int | None:
    if len(response) < HEADER_SIZE + 4:
        return None
    return struct.unpack_from(">I", response, HEADER_SIZE)[0]


def response_parameters(response: bytes, code: int) -> _Reader:
    pos = HEADER_SIZE + 4 * RESPONSE_HANDLES.get(code, 0)
    if struct.unpack_from(">H", response, 0)[0] == TPM_ST_SESSIONS:
        pos += 4
    return _Reader(response, pos)


@dataclass
class ObjectTable:
    """handle -> key variant, plus saved contexts by digest of their blob."""

    by_handle: dict[int, str] = field(default_factory=dict)
    by_context: dict[bytes, str] = field(default_factory=dict)

    def variant(self, handle: int) -> str | None:
        return self.by_handle.get(handle)

    def clear_transient(self) -> None:
        """Startup(CLEAR) or a power cycle: transient objects are gone."""
        self.by_handle = {h: v for h, v in self.by_handle.items() if h >> 24 != 0x80}

    def observe(self, code: int, command: bytes, response: bytes, rc: int) -> None:
        """Update the table after a command completed with response code ``rc``."""
        if rc != 0:
            return
        try:
            if code in (0x131, 0x157, 0x167, 0x191):
                variant = template_variant(command, code)
                handle = response_handle(response)
                if variant and handle is not None:
                    self.by_handle[handle] = variant
            elif code == 0x165:  # FlushContext(flushHandle) - the handle is a parameter
                r = parameters(command, code)
                if r is not None:
                    self.by_handle.pop(r.u32(), None)
            elif code == 0x120:  # EvictControl(auth, objectHandle; persistentHandle)
                _auth, obj = handles(command, 2)
                r = parameters(command, code)
                if r is not None:
                    persistent = r.u32()
                    if obj >> 24 == 0x81:
                        self.by_handle.pop(obj, None)
                    elif obj in self.by_handle:
                        self.by_handle[persistent] = self.by_handle[obj]
            elif code == 0x144:  # Startup
                r = parameters(command, code)
                if r is not None and r.u16() == 0:
                    self.clear_transient()
            elif code == 0x162:  # ContextSave(saveHandle) -> TPMS_CONTEXT
                (handle,) = handles(command, 1)
                if handle in self.by_handle:
                    self.by_context[_context_digest(response_parameters(response, code))] = self.by_handle[handle]
            elif code == 0x161:  # ContextLoad(TPMS_CONTEXT) -> loadedHandle
                r = parameters(command, code)
                handle = response_handle(response)
                if r is not None and handle is not None:
                    variant = self.by_context.get(_context_digest(r))
                    if variant:
                        self.by_handle[handle] = variant
        except (ValueError, struct.error):
            return


def _context_digest(r: _Reader) -> bytes:
    """Digest of a TPMS_CONTEXT's blob; the sequence number makes it unique."""
    r.u32(), r.u32()  # sequence (UINT64)
    r.u32(), r.u32()  # savedHandle, hierarchy
    return hashlib.sha256(r.tpm2b()).digest()
