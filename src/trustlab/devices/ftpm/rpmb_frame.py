"""RPMB frames as bytes: the 512-byte layout of the eMMC specification.

Pure bytes-in/bytes-out code (no device, no I/O), so framing can be tested on
its own and every party -- secure world, untrusted OS, eMMC -- shares exactly
one definition of the wire format. Layout (JEDEC eMMC, big-endian fields)::

    offset  size  field
    0       196   stuff bytes
    196     32    key (key programming) or MAC (HMAC-SHA256)
    228     256   data
    484     16    nonce
    500     4     write counter
    504     2     address (in 256-byte half-sectors)
    506     2     block count
    508     2     result
    510     2     request / response type

The MAC covers bytes 228..511 of every frame of a request or response,
concatenated, and is carried in the last frame.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac

FRAME_SIZE = 512
DATA_SIZE = 256
NONCE_SIZE = 16
MAC_SIZE = 32
KEY_SIZE = 32
MAC_START = 228  # the MAC covers frame[228:512]

# Request types (host -> device)
REQ_KEY_PROGRAM = 0x0001
REQ_READ_COUNTER = 0x0002
REQ_AUTH_WRITE = 0x0003
REQ_AUTH_READ = 0x0004
REQ_RESULT_READ = 0x0005
# Response types (device -> host) are the request type shifted into the high byte
RESP_KEY_PROGRAM = 0x0100
RESP_READ_COUNTER = 0x0200
RESP_AUTH_WRITE = 0x0300
RESP_AUTH_READ = 0x0400

# Result codes
RES_OK = 0x0000
RES_GENERAL_FAILURE = 0x0001
RES_AUTH_FAILURE = 0x0002
RES_COUNTER_FAILURE = 0x0003
RES_ADDRESS_FAILURE = 0x0004
RES_WRITE_FAILURE = 0x0005
RES_READ_FAILURE = 0x0006
RES_NO_KEY = 0x0007
RES_COUNTER_EXPIRED = 0x0080  # bit OR-ed into the result once the counter saturated

RESULT_NAMES = {
    RES_OK: "operation OK",
    RES_GENERAL_FAILURE: "general failure",
    RES_AUTH_FAILURE: "authentication failure",
    RES_COUNTER_FAILURE: "counter failure",
    RES_ADDRESS_FAILURE: "address failure",
    RES_WRITE_FAILURE: "write failure",
    RES_READ_FAILURE: "read failure",
    RES_NO_KEY: "authentication key not yet programmed",
}

_TAIL = struct.Struct(">16sIHHHH")  # nonce, counter, address, block count, result, type


def result_name(code: int) -> str:
    base = RESULT_NAMES.get(code & 0x7F, f"unknown result 0x{code:04x}")
    return base + (" (write counter expired)" if code & RES_COUNTER_EXPIRED else "")


@dataclass(frozen=True)
class Frame:
    """One RPMB data frame, decoded."""

    req_resp: int
    data: bytes = bytes(DATA_SIZE)
    key_mac: bytes = bytes(MAC_SIZE)
    nonce: bytes = bytes(NONCE_SIZE)
    write_counter: int = 0
    address: int = 0
    block_count: int = 0
    result: int = 0

    def __post_init__(self) -> None:
        if len(self.data) != DATA_SIZE:
            raise ValueError(f"RPMB frame data must be {DATA_SIZE} bytes, got {len(self.data)}")
        if len(self.key_mac) != MAC_SIZE or len(self.nonce) != NONCE_SIZE:
            raise ValueError("RPMB frame key/MAC must be 32 bytes and nonce 16 bytes")

    def to_bytes(self) -> bytes:
        return (bytes(196) + self.key_mac + self.data
                + _TAIL.pack(self.nonce, self.write_counter, self.address,
                             self.block_count, self.result, self.req_resp))

    @classmethod
    def from_bytes(cls, raw: bytes) -> "Frame":
        if len(raw) != FRAME_SIZE:
            raise ValueError(f"an RPMB frame is {FRAME_SIZE} bytes, got {len(raw)}")
        nonce, counter, address, count, result, kind = _TAIL.unpack(raw[484:512])
        # Built without __init__ (the crash campaigns decode ~10^5 frames): the slices of a
        # FRAME_SIZE frame have exactly the sizes __post_init__ checks, so there is nothing to check.
        frame = object.__new__(cls)
        frame.__dict__.update(req_resp=kind, data=raw[228:484], key_mac=raw[196:228], nonce=nonce,
                              write_counter=counter, address=address, block_count=count, result=result)
        return frame


def frame_type(raw: bytes) -> int:
    """The request/response type of an encoded frame, without decoding the rest."""
    return int.from_bytes(raw[510:512], "big")


def mac_frames(key: bytes, frames: list[bytes]) -> bytes:
    """HMAC-SHA256 over bytes 228..511 of each frame, as the spec defines it."""
    h = hmac.HMAC(key, hashes.SHA256())
    for raw in frames:
        h.update(raw[MAC_START:])
    return h.finalize()


def seal(key: bytes, frames: list[Frame]) -> list[bytes]:
    """Encode frames and put the MAC over all of them into the last one."""
    raws = [f.to_bytes() for f in frames]
    mac = mac_frames(key, raws)
    raws[-1] = raws[-1][:196] + mac + raws[-1][228:]  # the key/MAC field, bytes 196..227 (as to_bytes lays it out)
    return raws


def verify(key: bytes, frames: list[bytes]) -> bool:
    """Constant-time check of the MAC carried in the last frame."""
    h = hmac.HMAC(key, hashes.SHA256())
    for raw in frames:
        h.update(raw[MAC_START:])
    try:
        h.verify(frames[-1][196:228])
    except InvalidSignature:
        return False
    return True
