"""The serving transport's framings, without sockets (h11 style: bytes in, events out).

Three framings meet at the proxy's ports, for TPM 1.2 and TPM 2.0 alike:

- *raw* TPM frames, as swtpm's data port and ``tcti-swtpm`` speak them:
  ``tag(2) size(4) code(4) ...`` with ``size`` covering the whole frame;
- the Microsoft/IBM simulator framing (``tcti-mssim``): a 4-byte platform
  code, for ``TPM_SEND_COMMAND`` followed by ``locality(1) length(4) command``;
  the reply is ``length(4) response ack(4)=0``;
- swtpm's control channel (``CMD_INIT`` ...) is a separate port; the builders
  for the requests we send live here too.

A TPM 2.0 tag always starts with ``0x80`` and every simulator code is a small
big-endian integer, so one leading byte tells the two apart per frame.

The reader never buffers beyond ``max_frame`` (the TPM's largest command). A
frame announced larger, up to :data:`DISCARD_LIMIT`, is read past without
being kept and answered with ``TPM_RC_COMMAND_SIZE`` (libtpms' answer to a
command over its ``MAX_COMMAND_SIZE``); the connection stays in step and goes
on. A size beyond that limit no client means:
it is answered the same way and the stream is closed, because following it
would mean reading gigabytes. A frame cut short (end of stream, or a stall
the front end times out) gets the same answer (:meth:`FrameReader.abandon`):
libtpms answers ``TPM_RC_COMMAND_SIZE`` when fewer bytes arrive than the size
field announces.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from trustlab.devices.frame import (  # noqa: F401 - re-exported: the frame helpers every transport user needs
    HEADER_SIZE,
    TPM_RC_COMMAND_SIZE,
    Header,
    WireError,
    parse_header,
    response_code,
)
from trustlab.devices.tpm2.wire import error_response as tpm2_error_response
from trustlab.devices.tpm2.commands import (  # noqa: F401 - re-exported: the TPM 2.0 command tags (Part 2, 6.9)
    TPM_RC_BAD_TAG,  # and the code answering any other (TPM 1.2: TPM_BADTAG)
    TPM_ST_NO_SESSIONS,
    TPM_ST_SESSIONS,
)

MAX_FRAME = 4096 + 1024
"""Largest frame :class:`FrameReader` keeps by default (the front end passes the served TPM's own limit)."""
DISCARD_LIMIT = 1 << 16
"""Largest announced frame that is read past (and answered) rather than ending the connection: 64 KiB,
far above any TPM's buffer (libtpms 4 KiB, wolfTPM's v1.85 fwTPM 8 KiB) - a larger size is not a command."""

# MS simulator platform/data codes (TpmTcpProtocol.h)
MS_SIGNAL_POWER_ON = 1
MS_SIGNAL_POWER_OFF = 2
MS_SIGNAL_PHYS_PRES_ON = 3
MS_SIGNAL_PHYS_PRES_OFF = 4
MS_SEND_COMMAND = 8
MS_SIGNAL_CANCEL_ON = 9
MS_SIGNAL_CANCEL_OFF = 10
MS_SIGNAL_NV_ON = 11
MS_SIGNAL_NV_OFF = 12
MS_REMOTE_HANDSHAKE = 15
MS_SESSION_END = 20
MS_STOP = 21
MS_SIGNAL_RESET = 17
MS_SIGNAL_RESTART = 18

# swtpm control channel (swtpm's tpm_ioctl.h, PTM_* / CMD_* codes)
CMD_GET_CAPABILITY = 1
CMD_INIT = 2
CMD_SHUTDOWN = 3
CMD_GET_TPMESTABLISHED = 4
CMD_SET_LOCALITY = 5
CMD_HASH_START = 6
CMD_HASH_DATA = 7
CMD_HASH_END = 8
CMD_CANCEL_TPM_CMD = 9
CMD_STORE_VOLATILE = 10
CMD_RESET_TPMESTABLISHED = 11
CMD_GET_STATEBLOB = 12
CMD_SET_STATEBLOB = 13
CMD_STOP = 14
CMD_GET_CONFIG = 15
CMD_SET_DATAFD = 16
CMD_SET_BUFFERSIZE = 17
CMD_GET_INFO = 18
PTM_INIT_FLAG_DELETE_VOLATILE = 1

CONTROL_NAMES = {
    CMD_GET_CAPABILITY: "CMD_GET_CAPABILITY", CMD_INIT: "CMD_INIT", CMD_SHUTDOWN: "CMD_SHUTDOWN",
    CMD_GET_TPMESTABLISHED: "CMD_GET_TPMESTABLISHED", CMD_SET_LOCALITY: "CMD_SET_LOCALITY",
    CMD_HASH_START: "CMD_HASH_START", CMD_HASH_DATA: "CMD_HASH_DATA", CMD_HASH_END: "CMD_HASH_END",
    CMD_CANCEL_TPM_CMD: "CMD_CANCEL_TPM_CMD", CMD_STORE_VOLATILE: "CMD_STORE_VOLATILE",
    CMD_RESET_TPMESTABLISHED: "CMD_RESET_TPMESTABLISHED", CMD_GET_STATEBLOB: "CMD_GET_STATEBLOB",
    CMD_SET_STATEBLOB: "CMD_SET_STATEBLOB", CMD_STOP: "CMD_STOP", CMD_GET_CONFIG: "CMD_GET_CONFIG",
    CMD_SET_DATAFD: "CMD_SET_DATAFD", CMD_SET_BUFFERSIZE: "CMD_SET_BUFFERSIZE", CMD_GET_INFO: "CMD_GET_INFO",
}

ALLOWED_CONTROL = frozenset({
    CMD_GET_CAPABILITY, CMD_INIT, CMD_GET_TPMESTABLISHED, CMD_SET_LOCALITY, CMD_CANCEL_TPM_CMD,
    CMD_RESET_TPMESTABLISHED, CMD_GET_CONFIG, CMD_SET_BUFFERSIZE, CMD_GET_INFO,
})
"""Control codes a proxy client may send: what TSS TCTIs need (tcti-swtpm: CMD_SET_LOCALITY,
CMD_INIT for a reset; QEMU/swtpm_ioctl queries: capability, config, info, buffer size,
establishment bit; CMD_CANCEL_TPM_CMD). Everything else - CMD_SHUTDOWN and CMD_STOP (they
kill or halt the TPM for every client), state blobs, CMD_STORE_VOLATILE, the DRTM hash
sequence, CMD_SET_DATAFD and unknown codes - is refused with TPM_FAIL."""

CTRL_FIXED_LENGTH = frozenset({
    CMD_GET_CAPABILITY, CMD_INIT, CMD_SHUTDOWN, CMD_GET_TPMESTABLISHED, CMD_SET_LOCALITY, CMD_HASH_START,
    CMD_HASH_DATA, CMD_HASH_END, CMD_CANCEL_TPM_CMD, CMD_STORE_VOLATILE, CMD_RESET_TPMESTABLISHED, CMD_STOP,
    CMD_GET_CONFIG, CMD_SET_BUFFERSIZE, CMD_GET_INFO,
})
"""Control codes whose request length :func:`ctrl_request_length` knows: after refusing one
of these the stream stays in step; after any other the connection is closed."""

TPM_FAIL = 9
"""The result code of a refused control request (swtpm's generic failure)."""

TPM_BAD_ORDINAL = 10
"""The result code swtpm's control channel uses for a request it does not support."""

TPM12_COMMAND_TAGS = (0x00C1, 0x00C2, 0x00C3)  # TPM_TAG_RQU_COMMAND, _AUTH1_, _AUTH2_
TPM12_TAG_RSP_COMMAND = 0x00C4
TPM12_FAIL = 0x09
TPM12_BAD_PARAM_SIZE = 0x19
TPM12_BADTAG = 0x1E
_TPM12_RC = {TPM_RC_BAD_TAG: TPM12_BADTAG, TPM_RC_COMMAND_SIZE: TPM12_BAD_PARAM_SIZE, 0x101: TPM12_FAIL}
"""The TPM 1.2 return code (Part 2, 16) answering a frame a TPM 2.0 would answer with the key."""


def error_response(rc: int, family: str = "tpm2") -> bytes:
    """A minimal error response, as a TPM of ``family`` sends for a rejected frame.

    ``rc`` is a TPM 2.0 code; for ``"tpm1.2"`` it is translated to the TPM 1.2
    code for the same fault and the frame carries TPM_TAG_RSP_COMMAND.
    """
    if family == "tpm1.2":
        return struct.pack(">HII", TPM12_TAG_RSP_COMMAND, HEADER_SIZE, _TPM12_RC.get(rc, TPM12_FAIL))
    return tpm2_error_response(rc)


# ---- data port: incoming frames -------------------------------------------

@dataclass(frozen=True)
class Command:
    """A complete TPM command. ``framing`` is ``"raw"`` or ``"mssim"``."""

    payload: bytes
    framing: str = "raw"
    locality: int = 0

    @property
    def code(self) -> int:
        return parse_header(self.payload).code


@dataclass(frozen=True)
class Handshake:
    """MS simulator ``REMOTE_HANDSHAKE`` (client version)."""

    client_version: int


@dataclass(frozen=True)
class SessionEnd:
    """The client says goodbye (``TPM_SESSION_END`` / ``TPM_STOP``)."""


@dataclass(frozen=True)
class Reject:
    """Input that cannot be framed: answer ``reply`` then close."""

    reason: str
    reply: bytes


@dataclass(frozen=True)
class Refuse:
    """A whole frame larger than the TPM takes, read past: answer ``reply`` (TPM_RC_COMMAND_SIZE) and go on."""

    reason: str
    reply: bytes
    framing: str = "raw"


class NeedData:
    """Sentinel: the buffer holds only part of a frame."""


NEED_DATA = NeedData()
Event = Command | Handshake | SessionEnd | Reject | Refuse | NeedData


class FrameReader:
    """Splits a byte stream into :class:`Command` / control events.

    Feed bytes with :meth:`feed`, pull events with :meth:`next_event` until it
    returns :data:`NEED_DATA`. After a :class:`Reject` the reader is dead (the
    stream is out of sync); further calls return the same reject.
    """

    def __init__(self, max_frame: int = MAX_FRAME, family: str = "tpm2") -> None:
        self._buf = bytearray()
        self.max_frame = max_frame
        self.family = family
        self._dead: Reject | None = None
        self._skip = 0
        """Bytes of an oversized frame still to be read past (and dropped)."""
        self._skipped: Refuse | None = None
        """The answer due once they have been."""

    def feed(self, data: bytes) -> None:
        if self._dead is not None:
            return
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished frame held or still being read past (0: between frames)."""
        return len(self._buf) + self._skip + (self._skipped is not None)

    def abandon(self) -> Reject | None:
        """The stream ends (or stalls) inside a frame: the answer libtpms gives a frame shorter than its
        size field (TPM_RC_COMMAND_SIZE), or None between frames."""
        if self._dead is not None or not self.buffered:
            return None
        framing = self._skipped.framing if self._skipped is not None else (
            "mssim" if self._buf[:1] == b"\0" and self.family == "tpm2" else "raw")
        return self._reject(f"the stream ended {self.buffered} byte(s) into an unfinished frame",
                            TPM_RC_COMMAND_SIZE, framing)

    def _oversized(self, announced: int, prefix: int, framing: str) -> Reject | Refuse | NeedData:
        """A frame announced larger than ``max_frame`` (after ``prefix`` framing bytes): read past it and
        refuse it, or (beyond :data:`DISCARD_LIMIT`) refuse it and end the stream."""
        reason = f"a {announced}-byte command exceeds the TPM's {self.max_frame}-byte maximum command size"
        if announced > DISCARD_LIMIT:
            return self._reject(reason + " (beyond any TPM command: the stream is closed)", TPM_RC_COMMAND_SIZE,
                                framing)
        end = prefix + announced
        self._skip = max(0, end - len(self._buf))
        del self._buf[:end]
        self._skipped = Refuse(reason, frame_reply(error_response(TPM_RC_COMMAND_SIZE, self.family), framing),
                               framing)
        return self._refusal()

    def _refusal(self) -> Refuse | NeedData:
        if self._skip:
            return NEED_DATA
        refuse, self._skipped = self._skipped, None
        assert refuse is not None
        return refuse

    def _reject(self, reason: str, rc: int, framing: str = "raw") -> Reject:
        """Dead from here on; the reply is an error response in the client's own framing."""
        self._dead = Reject(reason, frame_reply(error_response(rc, self.family), framing))
        self._buf.clear()
        return self._dead

    def next_event(self) -> Event:
        if self._dead is not None:
            return self._dead
        if self._skipped is not None:
            return self._refusal()
        buf = self._buf
        if not buf:
            return NEED_DATA
        if buf[0] == 0x80 and self.family == "tpm2":
            return self._raw()
        if buf[0] == 0 and self.family == "tpm1.2":  # 0x00C1..3 is a TPM 1.2 tag, 0x0000 a simulator code
            if len(buf) < 2:
                return NEED_DATA
            if buf[1] != 0:
                return self._raw()
        if buf[0] != 0:
            expected = ("a TPM 1.2 tag (0x00C1..0x00C3)" if self.family == "tpm1.2"
                        else "a TPM 2.0 tag (0x8001, 0x8002)")
            return self._reject(f"first byte {buf[0]:#04x}: expected {expected} or a simulator code (0x0000...)",
                                TPM_RC_BAD_TAG)
        if len(buf) < 4:
            return NEED_DATA
        (code,) = struct.unpack(">I", buf[:4])
        if code == MS_SEND_COMMAND:
            if len(buf) < 9:
                return NEED_DATA
            locality = buf[4]
            (length,) = struct.unpack(">I", buf[5:9])
            if length < HEADER_SIZE:
                return self._reject(f"TPM_SEND_COMMAND length {length} out of range", TPM_RC_COMMAND_SIZE, "mssim")
            if length > self.max_frame:
                return self._oversized(length, 9, "mssim")
            if len(buf) < 9 + length:
                return NEED_DATA
            payload = bytes(buf[9:9 + length])
            del buf[:9 + length]
            err = _check_command(payload, self.family, self.max_frame)
            if err:
                return self._reject(err.args[0], err.rc, "mssim")
            return Command(payload, "mssim", locality)
        if code == MS_REMOTE_HANDSHAKE:
            if len(buf) < 8:
                return NEED_DATA
            (version,) = struct.unpack(">I", buf[4:8])
            del buf[:8]
            return Handshake(version)
        if code in (MS_SESSION_END, MS_STOP):
            del buf[:4]
            return SessionEnd()
        return self._reject(f"unknown simulator code {code}", TPM_RC_BAD_TAG)

    def _raw(self) -> Event:
        buf = self._buf
        if len(buf) < HEADER_SIZE:
            return NEED_DATA
        header = parse_header(bytes(buf[:HEADER_SIZE]))
        err = _check_header(header, self.max_frame, self.family)
        tpm12 = self.family == "tpm1.2"
        if err and header.size > self.max_frame and err.rc == TPM_RC_COMMAND_SIZE:
            return self._oversized(header.size, 0, "raw")
        if err and not (tpm12 and err.rc == TPM_RC_BAD_TAG):  # (a TPM 1.2 answers a bad tag itself: TPM_BADTAG)
            return self._reject(err.args[0], err.rc)
        if len(buf) < header.size:
            return NEED_DATA
        # swtpm hands libtpms each read as one command, and libtpms answers a paramSize short of the
        # bytes sent with TPM_BAD_PARAM_SIZE: a TPM 1.2 frame is everything that has arrived
        end = len(buf) if tpm12 else header.size
        payload = bytes(buf[:end])
        del buf[:end]
        return Command(payload, "raw")


def whole_raw_command(data: bytes, family: str = "tpm2", max_frame: int = MAX_FRAME) -> bool:
    """Is ``data`` exactly one complete, well-formed raw command - what :class:`FrameReader` would return
    as one :class:`Command` and nothing else? (The front end's fast path for the usual single read.)"""
    if len(data) < HEADER_SIZE:
        return False
    tag, size = _TAG_SIZE.unpack_from(data)
    tags = TPM12_COMMAND_TAGS if family == "tpm1.2" else _TPM2_TAGS
    return size == len(data) and size <= max_frame and tag in tags


_TAG_SIZE = struct.Struct(">HI")
_SIZE = struct.Struct(">I")
_TPM2_TAGS = (TPM_ST_NO_SESSIONS, TPM_ST_SESSIONS)


def _check_header(header: Header, max_frame: int = MAX_FRAME, family: str = "tpm2") -> WireError | None:
    tags = TPM12_COMMAND_TAGS if family == "tpm1.2" else _TPM2_TAGS
    if header.tag not in tags:
        return WireError(f"tag {header.tag:#06x} is not a {family} command tag", TPM_RC_BAD_TAG)
    if header.size < HEADER_SIZE or header.size > max_frame:
        return WireError(f"size field {header.size} out of range [{HEADER_SIZE}, {max_frame}]",
                         TPM_RC_COMMAND_SIZE)
    return None


def _check_command(payload: bytes, family: str = "tpm2", max_frame: int = MAX_FRAME) -> WireError | None:
    header = parse_header(payload)
    err = _check_header(header, max_frame, family)
    if err is None and header.size != len(payload):
        err = WireError(f"size field {header.size} disagrees with the {len(payload)}-byte frame")
    return err


def frame_reply(response: bytes, framing: str) -> bytes:
    """The bytes a client expects for ``response`` in its framing."""
    if framing == "mssim":
        return struct.pack(">I", len(response)) + response + b"\0\0\0\0"
    return response


def handshake_reply(server_version: int = 1, flags: int = 0x7) -> bytes:
    """``REMOTE_HANDSHAKE`` answer: version, flags (powered, locality, NV available), ack."""
    return struct.pack(">III", server_version, flags, 0)


# ---- responses coming back from a backend ---------------------------------

def response_length(head: bytes) -> int:
    """Total length of a response given at least its 10-byte header."""
    if len(head) < HEADER_SIZE:
        raise WireError(f"frame of {len(head)} bytes is shorter than a TPM header")
    size = _SIZE.unpack_from(head, 2)[0]  # (no Header object: once per backend response)
    if size < HEADER_SIZE or size > MAX_FRAME * 4:
        raise WireError(f"backend response size {size} out of range")
    return size


# ---- swtpm control channel -------------------------------------------------

def ctrl_request(code: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", code) + payload


def ctrl_init(flags: int = 0) -> bytes:
    """``CMD_INIT``: (re)initialise the TPM, like a power cycle."""
    return ctrl_request(CMD_INIT, struct.pack(">I", flags))


def ctrl_result(reply: bytes) -> int:
    """The 4-byte result code at the start of every control reply."""
    if len(reply) < 4:
        raise WireError(f"control reply of {len(reply)} bytes has no result code")
    return struct.unpack(">I", reply[:4])[0]


def ctrl_error(result: int = TPM_BAD_ORDINAL) -> bytes:
    """A control reply carrying only a failing result code."""
    return struct.pack(">I", result)


def ctrl_request_length(buf: bytes) -> int | None:
    """Length of the control request at the start of ``buf`` (None = need more).

    Used by the proxy to trace control traffic it relays; codes with a
    variable or unknown layout are relayed as whatever arrived in one read.
    """
    if len(buf) < 4:
        return None
    code = struct.unpack(">I", buf[:4])[0]
    fixed = {CMD_INIT: 4, CMD_SET_LOCALITY: 1, CMD_RESET_TPMESTABLISHED: 1, CMD_SET_BUFFERSIZE: 4,
             CMD_GET_INFO: 16}
    if code == CMD_HASH_DATA:
        if len(buf) < 8:
            return None
        return 8 + struct.unpack(">I", buf[4:8])[0]
    return 4 + fixed.get(code, 0)
