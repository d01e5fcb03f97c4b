"""ISO 7816-4 command/response APDU framing (bytes in, bytes out, no I/O).

Extended length is used because one stage of an XMSS^MT signature (up to a
few KiB) does not fit a short response; JCOP cards support it.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.errors import TrustlabError

SW_OK = 0x9000
SW_WRONG_LENGTH = 0x6700
SW_KEY_USED = 0x6982          # security status: that one-time key is used up
SW_NO_SESSION = 0x6985        # conditions of use not satisfied (no signing session / wrong stage)
SW_PREPARE_FIRST = 0x6986     # command not allowed: preparation step missing
SW_WRONG_DATA = 0x6A80
SW_EXHAUSTED = 0x6A84         # not enough memory space: every one-time key is used
SW_INS_NOT_SUPPORTED = 0x6D00


@dataclass(frozen=True)
class Command:
    cla: int
    ins: int
    p1: int = 0
    p2: int = 0
    data: bytes = b""
    le: int = 0  # 0 = none expected; 65536 = maximum

    def encode(self) -> bytes:
        head = bytes([self.cla, self.ins, self.p1, self.p2])
        body = b""
        if self.data:
            body += b"\x00" + len(self.data).to_bytes(2, "big") + self.data
        if self.le:
            le = (0 if self.le >= 65536 else self.le).to_bytes(2, "big")
            body += le if self.data else b"\x00" + le
        return head + body

    @classmethod
    def decode(cls, raw: bytes) -> "Command":
        if len(raw) < 4:
            raise TrustlabError(f"APDU of {len(raw)} bytes: shorter than the 4-byte header")
        cla, ins, p1, p2 = raw[:4]
        rest = raw[4:]
        if not rest:
            return cls(cla, ins, p1, p2)
        if rest[0] != 0 or len(rest) < 3:
            raise TrustlabError("APDU: only extended-length encoding is accepted by this applet")
        n = int.from_bytes(rest[1:3], "big")
        if len(rest) == 3:  # Le only
            return cls(cla, ins, p1, p2, b"", n or 65536)
        data = rest[3:3 + n]
        if len(data) != n:
            raise TrustlabError(f"APDU: Lc says {n} data bytes, {len(data)} present")
        tail = rest[3 + n:]
        le = (int.from_bytes(tail, "big") or 65536) if len(tail) == 2 else 0
        if len(tail) not in (0, 2):
            raise TrustlabError("APDU: trailing bytes after data")
        return cls(cla, ins, p1, p2, data, le)


def response(data: bytes, sw: int) -> bytes:
    return data + sw.to_bytes(2, "big")


def split_response(raw: bytes) -> tuple[bytes, int]:
    if len(raw) < 2:
        raise TrustlabError("response APDU shorter than its status word")
    return raw[:-2], int.from_bytes(raw[-2:], "big")
