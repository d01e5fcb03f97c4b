"""Malformed input never takes the proxy down (property-based).

Garbage, truncated headers, lying size fields, 1 MiB frames, unknown command
codes, MS-simulator frames and abrupt disconnects are thrown at the proxy's
data port. For each input: the connection gets exactly the replies its
well-formed frames deserve, a TPM error for the first malformed one, and is
then closed; the next well-formed client is served; and swtpm's state (an NV
marker, a counter) is intact. The long run lives in benchmarks/bench_tpm2.py.
"""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tpm2_pytss import ESAPI, TCTILdr
from tpm2_pytss.constants import TPM2_ALG, TPMA_NV
from tpm2_pytss.types import TPM2B_NV_PUBLIC, TPMS_NV_PUBLIC

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import wire
from trustlab.devices.tpm2.commands import COMMAND_CODES
from trustlab.devices.tpm2.cost import zero_profile
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import Swtpm, recv_exact

from .conftest import needs_swtpm

pytestmark = needs_swtpm

NV_MARKER = 0x01500040
MARKER = b"trustlab-state-marker-0123456789"
# commands whose random bodies cannot hurt state even if they happened to parse
SAFE_CODES = [0x17B, 0x17D, 0x17A, 0x17E, 0x173, 0x169, 0x15D, 0x177, 0x16B, 0x18A, 0x17C, 0x181, 0x14E]


def nv_read_frame(index: int, size: int) -> bytes:
    auth = struct.pack(">IHBH", 0x40000009, 0, 1, 0)
    body = struct.pack(">II", index, index) + struct.pack(">I", len(auth)) + auth + struct.pack(">HH", size, 0)
    return struct.pack(">HII", 0x8002, 10 + len(body), 0x14E) + body


def transact(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        head = recv_exact(s, 10)
        return head + recv_exact(s, wire.parse_header(head).size - 10)


@pytest.fixture
def served():
    with Swtpm() as tpm, TimingProxy(zero_profile(), tpm, virtual=True) as proxy:
        with ESAPI(TCTILdr("swtpm", proxy.tcti_conf)) as esys:
            nv = esys.nv_define_space(b"", TPM2B_NV_PUBLIC(TPMS_NV_PUBLIC(
                nvIndex=NV_MARKER, nameAlg=TPM2_ALG.SHA256, dataSize=len(MARKER),
                attributes=TPMA_NV.OWNERWRITE | TPMA_NV.OWNERREAD | TPMA_NV.AUTHWRITE | TPMA_NV.AUTHREAD
                | TPMA_NV.NO_DA)))
            esys.nv_write(nv, MARKER)
        yield tpm, proxy


def assert_intact(tpm: Swtpm, proxy: TimingProxy) -> None:
    """The next well-formed client is served and the TPM still holds its state."""
    rsp = transact(proxy.port, tpm2wire.build_command(0x17B, b"\x00\x08"))
    assert wire.response_code(rsp) == 0 and len(rsp) == 20
    rsp = transact(proxy.port, nv_read_frame(NV_MARKER, len(MARKER)))
    assert wire.response_code(rsp) == 0, hex(wire.response_code(rsp))
    assert rsp[16:16 + len(MARKER)] == MARKER
    assert tpm.alive


def expected_replies(data: bytes) -> list:
    """What the proxy must answer for ``data``, by framing it the way the proxy must."""
    reader = wire.FrameReader(max_frame=4096)
    reader.feed(data)
    out = []
    while (ev := reader.next_event()) is not wire.NEED_DATA:
        out.append(ev)
        if isinstance(ev, (wire.Reject, wire.SessionEnd)):
            break
    return out


def check_replies(events: list, reply: bytes) -> None:
    """``reply`` holds the replies ``events`` deserve, in order.

    When the input ends in a reject, the proxy closes with our surplus bytes
    unread, the kernel resets the connection, and replies still in flight may
    be lost: then a cut after any complete reply is accepted too.
    """
    rejected = any(isinstance(ev, wire.Reject) for ev in events)
    pos = 0
    for ev in events:
        if rejected and pos == len(reply):
            return
        if isinstance(ev, wire.SessionEnd):
            break
        if isinstance(ev, wire.Handshake):
            assert reply[pos:pos + 12] == wire.handshake_reply()
            pos += 12
            continue
        if isinstance(ev, wire.Reject):
            # an error answer, unless the connection was reset before we could read it
            assert reply[pos:] in (ev.reply, b""), (ev, reply[pos:])
            return
        if ev.framing == "mssim":
            (n,) = struct.unpack(">I", reply[pos:pos + 4])
            pos += 4
        head = wire.parse_header(reply[pos:pos + 10])
        assert head.tag in (0x8001, 0x8002) and head.size >= 10
        pos += head.size
        if ev.framing == "mssim":
            assert head.size == n and reply[pos:pos + 4] == b"\0\0\0\0"
            pos += 4
    assert pos <= len(reply)


def send_and_collect(port: int, data: bytes, mode: str) -> bytes:
    """Send ``data``; 'eof' half-closes and reads all replies, 'reset' drops the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return b""
        if mode == "reset":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return b""
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:  # the proxy already closed after a reject
            pass
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        s.close()


header = st.builds(lambda tag, size, code: struct.pack(">HII", tag, size, code),
                   st.sampled_from([0x8001, 0x8002, 0x80C1, 0x8000, 0xFFFF]),
                   st.one_of(st.integers(0, 64), st.integers(0, 5000), st.just(1 << 20), st.integers(0, 2**32 - 1)),
                   st.one_of(st.sampled_from(SAFE_CODES), st.integers(0, 0x3FF).filter(lambda c: c not in COMMAND_CODES),
                             st.integers(0, 2**32 - 1).filter(lambda c: c not in COMMAND_CODES)))


@st.composite
def honest_frame(draw):
    """A frame whose size field tells the truth: unknown codes, random bodies."""
    code = draw(st.one_of(st.sampled_from(SAFE_CODES), st.integers(0x400, 0xFFFF)))
    body = draw(st.binary(max_size=64))
    return tpm2wire.build_command(code, body, tag=draw(st.sampled_from([0x8001, 0x8002])))


@st.composite
def mssim_frame(draw):
    inner = draw(honest_frame())
    length = draw(st.one_of(st.just(len(inner)), st.integers(0, 10000)))
    return struct.pack(">IBI", wire.MS_SEND_COMMAND, draw(st.integers(0, 255)), length) + inner


piece = st.one_of(
    st.binary(min_size=1, max_size=300),                          # garbage
    header.map(lambda h: h),                                      # a header, size possibly lying
    st.tuples(header, st.binary(max_size=200)).map(lambda t: t[0] + t[1]),
    honest_frame(),                                               # unknown codes / random bodies
    honest_frame().map(lambda f: f[:len(f) // 2]),                # truncated
    mssim_frame(),
    st.sampled_from([struct.pack(">II", wire.MS_REMOTE_HANDSHAKE, 1), struct.pack(">I", wire.MS_SESSION_END),
                     struct.pack(">I", 0x7F)]),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(pieces=st.lists(piece, min_size=1, max_size=4), mode=st.sampled_from(["eof", "eof", "reset"]))
def test_malformed_input_never_takes_the_proxy_down(served, pieces, mode):
    tpm, proxy = served
    data = b"".join(pieces)
    reply = send_and_collect(proxy.port, data, mode)
    if mode == "eof":
        check_replies(expected_replies(data), reply)
    assert_intact(tpm, proxy)


def test_one_mib_frame_is_refused(served):
    tpm, proxy = served
    frame = struct.pack(">HII", 0x8001, 1 << 20, 0x17B) + b"\0" * ((1 << 20) - 10)
    reply = send_and_collect(proxy.port, frame, "eof")
    assert reply in (b"", wire.error_response(0x142))  # TPM_RC_COMMAND_SIZE, or closed under our feet
    assert_intact(tpm, proxy)


def test_abrupt_disconnect_mid_frame_and_concurrent_clients(served):
    tpm, proxy = served
    for cut in (1, 5, 9, 11):
        send_and_collect(proxy.port, nv_read_frame(NV_MARKER, 8)[:cut], "reset")
    import threading
    results = []

    def client():
        results.append(wire.response_code(transact(proxy.port, tpm2wire.build_command(0x17B, b"\x00\x10"))))

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0] * 8
    assert_intact(tpm, proxy)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(
    st.binary(min_size=1, max_size=64).filter(lambda b: b[:4] not in (b"\0\0\0\x02", b"\0\0\0\x03", b"\0\0\0\x0a")),
    st.sampled_from([struct.pack(">I", wire.CMD_STOP), struct.pack(">I", wire.CMD_SET_STATEBLOB) + b"\0" * 20,
                     struct.pack(">II", wire.CMD_HASH_DATA, 1 << 30), struct.pack(">I", 0xDEAD)])))
def test_control_port_garbage_is_refused(served, data):
    """Unknown, unsafe or malformed control requests are refused; the TPM keeps serving."""
    tpm, proxy = served
    with socket.create_connection(("127.0.0.1", proxy.ctrl_port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass
    assert_intact(tpm, proxy)
