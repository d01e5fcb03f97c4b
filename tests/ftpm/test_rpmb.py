"""The eMMC RPMB device and the TEE driver, attacked frame by frame."""

import pytest

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.errors import RpmbError, StorageUnavailable
from trustlab.devices.ftpm.normal_world import NormalWorld, OsBehaviour
from trustlab.devices.ftpm.rpmb import COUNTER_MAX, RpmbDevice
from trustlab.devices.ftpm.rpmb_client import RpmbClient
from trustlab.devices.ftpm.rpmb_frame import Frame

KEY = bytes(range(32))


def setup(size=16, **kw):
    dev = RpmbDevice(size, **kw)
    os_ = NormalWorld(dev)
    client = RpmbClient(os_, KEY)
    client.program_key()
    return dev, os_, client


def result_of(os_, request):
    return os_.inject(request)


def test_frame_layout_round_trip_and_offsets():
    f = Frame(req_resp=rf.REQ_AUTH_WRITE, data=b"\x11" * 256, nonce=b"\x22" * 16, write_counter=0x01020304,
              address=0x0506, block_count=1, result=0)
    raw = f.to_bytes()
    assert len(raw) == 512
    assert raw[228:484] == b"\x11" * 256 and raw[484:500] == b"\x22" * 16
    assert raw[500:504] == bytes([1, 2, 3, 4]) and raw[504:506] == bytes([5, 6])
    assert raw[510:512] == bytes([0, 3])
    assert Frame.from_bytes(raw) == f


def test_mac_covers_bytes_228_to_511_only():
    raws = rf.seal(KEY, [Frame(req_resp=rf.REQ_AUTH_WRITE, block_count=1)])
    assert rf.verify(KEY, raws)
    stuffed = [b"\xff" * 196 + raws[0][196:]]  # stuff bytes are outside the MAC
    assert rf.verify(KEY, stuffed)
    for pos in (228, 400, 484, 503, 511):
        bad = bytearray(raws[0]); bad[pos] ^= 1
        assert not rf.verify(KEY, [bytes(bad)])


def test_key_is_programmed_once():
    dev, os_, client = setup()
    with pytest.raises(RpmbError) as e:
        RpmbClient(os_, b"\x01" * 32).program_key()
    assert e.value.result == rf.RES_WRITE_FAILURE
    client.write(0, [b"a" * 256])  # the original key still works


def test_unprogrammed_device_reports_no_key():
    dev = RpmbDevice(4)
    with pytest.raises(RpmbError) as e:
        RpmbClient(NormalWorld(dev), KEY).read_counter()
    assert e.value.result == rf.RES_NO_KEY


def test_write_read_counter():
    dev, os_, client = setup()
    assert client.read_counter() == 0
    client.write(3, [b"x" * 256])
    client.write(4, [b"y" * 256])
    assert client.read(3) == [b"x" * 256] and client.read(4) == [b"y" * 256]
    assert client.read_counter() == 2 == dev.write_counter


def test_replayed_write_is_refused_with_counter_failure():
    dev, os_, client = setup()
    client.write(1, [b"old!" * 64])
    client.write(1, [b"new!" * 64])
    old_request = os_.capture.write_requests[1]
    assert result_of(os_, old_request) == rf.RES_COUNTER_FAILURE
    assert dev.peek(1) == b"new!" * 64


def test_reordered_writes_are_refused():
    dev, os_, client = setup()
    frames_a = rf.seal(KEY, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=b"A" * 256, write_counter=0, address=2, block_count=1)])
    frames_b = rf.seal(KEY, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=b"B" * 256, write_counter=1, address=2, block_count=1)])
    assert result_of(os_, frames_b) == rf.RES_COUNTER_FAILURE  # second before first
    assert result_of(os_, frames_a) == rf.RES_OK
    assert result_of(os_, frames_b) == rf.RES_OK
    assert dev.peek(2) == b"B" * 256


def test_forged_write_is_refused_with_auth_failure():
    dev, os_, client = setup()
    forged = rf.seal(b"\x00" * 32, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=b"F" * 256, write_counter=0, address=0, block_count=1)])
    assert result_of(os_, forged) == rf.RES_AUTH_FAILURE
    good = rf.seal(KEY, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=b"G" * 256, write_counter=0, address=0, block_count=1)])
    tampered = bytearray(good[0]); tampered[300] ^= 0x80
    assert result_of(os_, [bytes(tampered)]) == rf.RES_AUTH_FAILURE
    assert dev.write_counter == 0 and dev.peek(0) == bytes(256)


def test_address_failure_and_multiblock_limits():
    dev, os_, client = setup(size=4, rel_wr_sec_c=1)
    with pytest.raises(RpmbError) as e:
        client.write(4, [b"z" * 256])
    assert e.value.result == rf.RES_ADDRESS_FAILURE
    client.write(2, [b"p" * 256, b"q" * 256])  # one reliable-write sector = 2 frames
    assert client.read(2, 2) == [b"p" * 256, b"q" * 256]
    with pytest.raises(RpmbError):
        client.write(0, [b"r" * 256] * 3)


def test_replayed_read_response_is_refused_by_nonce():
    dev, os_, client = setup()
    client.write(5, [b"v1" * 128])
    client.read(5)
    client.write(5, [b"v2" * 128])
    os_.behaviour.replay_responses = True
    with pytest.raises(RpmbError, match="nonce"):
        client.read(5)
    with pytest.raises(RpmbError, match="nonce"):
        client.read_counter()


def test_forged_read_response_is_refused_by_mac():
    dev, os_, client = setup()
    client.write(5, [b"v1" * 128])

    class Forger(NormalWorld):
        def rpmb(self, request, response_frames=1):
            resp = super().rpmb(request, response_frames)
            bad = bytearray(resp[0]); bad[240] ^= 1
            return [bytes(bad)]

    forger = Forger(dev)
    with pytest.raises(RpmbError, match="MAC"):
        RpmbClient(forger, KEY).read(5)


def test_counter_expiry_stops_writes():
    dev, os_, client = setup(initial_counter=COUNTER_MAX - 1)
    client.write(0, [b"last" * 64])
    with pytest.raises(RpmbError) as e:
        client.write(0, [b"more" * 64])
    assert e.value.result & rf.RES_COUNTER_EXPIRED
    assert dev.peek(0) == b"last" * 64


def test_os_refusing_or_absent_raises_storage_unavailable():
    dev, os_, client = setup()
    os_.behaviour.refuse_writes = True
    with pytest.raises(StorageUnavailable):
        client.write(0, [b"x" * 256])
    os_.behaviour = OsBehaviour(available=False)
    with pytest.raises(StorageUnavailable):
        client.read(0)


def test_held_write_delivered_later_is_accepted_only_until_the_counter_moves():
    dev, os_, client = setup()
    os_.behaviour.hold_writes = True
    with pytest.raises(StorageUnavailable):
        client.write(0, [b"held" * 64])
    os_.behaviour.hold_writes = False
    client.write(0, [b"next" * 64])          # the TEE moves on
    assert os_.release_held() == [rf.RES_COUNTER_FAILURE]
    assert dev.peek(0) == b"next" * 64


def test_replayed_write_response_cannot_fake_a_successful_write():
    dev, os_, client = setup()
    client.write(6, [b"real" * 64])
    os_.behaviour.replay_responses = True  # the OS drops the next write and replays the old "OK"
    with pytest.raises(RpmbError, match="does not confirm"):
        client.write(6, [b"fake" * 64])
    assert dev.peek(6) == b"real" * 64
    os_.behaviour.replay_responses = False
    client.write(6, [b"next" * 64])  # the driver re-synchronised its counter
    assert dev.peek(6) == b"next" * 64


def test_os_redirecting_a_read_to_another_address_is_refused():
    dev, os_, client = setup()
    client.write(1, [b"one." * 64])
    client.write(2, [b"two." * 64])

    class Redirect(NormalWorld):
        def rpmb(self, request, response_frames=1):
            f = Frame.from_bytes(request[0])
            if f.req_resp == rf.REQ_AUTH_READ:  # read requests carry no MAC: rewrite the address
                from dataclasses import replace
                request = [replace(f, address=2).to_bytes()]
            return super().rpmb(request, response_frames)

    with pytest.raises(RpmbError, match="does not answer"):
        RpmbClient(Redirect(dev), KEY).read(1)
