"""SSK derivation, the atomic store and the blob (NVStore) layer."""

import pytest
from hypothesis import given, settings, strategies as st

from trustlab.devices.ftpm.atomic_store import PAYLOAD, ROOT_BITS, capacity, commit_terms
from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.errors import FtpmError, StorageCorrupt, StorageUnavailable
from trustlab.devices.ftpm.keys import DeviceSecrets, derive_keys
from trustlab.devices.ftpm.platform import Platform


def test_ssk_depends_on_fuses_device_key_and_uuid():
    base = DeviceSecrets.for_seed(1)
    k = derive_keys(base)
    assert len({k.ssk, k.rpmb_key, k.aead_key}) == 3
    from dataclasses import replace
    import uuid
    for other in (replace(base, hardware_fuses=b"\x00" * 32), replace(base, device_key=b"\x00" * 32),
                  replace(base, uuid=uuid.UUID(int=5))):
        assert derive_keys(other).ssk != k.ssk
    assert derive_keys(DeviceSecrets.for_seed(1)) == k  # deterministic


def test_commit_abort_and_persistence_across_boots():
    p = Platform(n_blocks=6)
    _, s = p.boot()
    with s.transaction():
        s.write(0, b"alpha")
        s.write(4, b"beta")
        assert s.read(0)[:5] == b"alpha"  # reads see the cached write
    s.begin(); s.write(0, b"gamma"); s.abort()
    assert s.read(0)[:5] == b"alpha"
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.write(1, b"never")
            raise RuntimeError("command failed")
    _, s2 = p.boot()
    assert s2.read(0)[:5] == b"alpha" and s2.read(4)[:4] == b"beta" and s2.read(1) == bytes(PAYLOAD)


def test_commit_writes_shadows_then_one_root_write():
    p = Platform(n_blocks=8)
    _, s = p.boot()
    before = p.device.write_counter
    s.begin()
    for i in (1, 2, 5):
        s.write(i, bytes([i]) * 10)
    assert p.device.write_counter == before  # cached, nothing written yet
    assert s.commit() == 4  # three shadows + one root
    assert p.device.write_counter == before + 4
    s.begin(); s.write(1, bytes([1]) * 10); assert s.commit() == 0  # unchanged data costs nothing


def test_plaintext_never_reaches_the_emmc_and_tampering_is_detected():
    p = Platform(n_blocks=4)
    _, s = p.boot()
    secret = b"sealed-storage-root-key-material"
    with s.transaction():
        s.write(2, secret)
    raw = b"".join(p.device.peek(a) for a in range(p.device.size_blocks))
    assert secret not in raw
    # a chip-level attacker flips a ciphertext bit in the committed copy
    _, s = p.boot()
    for addr in range(1, p.device.size_blocks):
        blk = p.device.peek(addr)
        if blk != bytes(256):
            p.device._blocks[addr] = blk[:40] + bytes([blk[40] ^ 1]) + blk[41:]
    with pytest.raises(StorageCorrupt):
        s.read(2)


def test_blocks_cannot_be_swapped_between_slots():
    p = Platform(n_blocks=4)
    _, s = p.boot()
    with s.transaction():
        s.write(0, b"zero"); s.write(1, b"one")
    a0, a1 = s._data_addr(0, 1), s._data_addr(1, 1)
    p.device._blocks[a0], p.device._blocks[a1] = p.device.peek(a1), p.device.peek(a0)
    _, s = p.boot()
    with pytest.raises(StorageCorrupt):
        s.read(0)


def test_two_level_indirection_commits_atomically():
    p = Platform(n_blocks=40, levels=2, fanout=8)
    _, s = p.boot()
    assert s.m == 5
    s.begin()
    for i in (0, 9, 39):
        s.write(i, bytes([i + 1]) * 4)
    assert s.commit() == 3 + 3 + 1  # data shadows, bitmap shadows, root
    with s.transaction():
        s.write(9, b"again")
    _, s = p.boot()
    assert s.read(0)[:4] == b"\x01" * 4 and s.read(9)[:5] == b"again" and s.read(39)[:4] == bytes([40]) * 4


def test_capacity_by_bit_vector_and_by_rpmb_address_space():
    one, two = capacity(1), capacity(2)
    assert one.logical_blocks == ROOT_BITS
    assert two.logical_blocks == ROOT_BITS * 2048
    assert two.logical_blocks > 1000 * one.logical_blocks
    # the 16-bit RPMB address field (16 MB) is the binding limit of the two-level scheme
    assert two.address_limited_blocks < two.logical_blocks
    assert two.address_limited_blocks * 2 + 1 <= 65536
    with pytest.raises(FtpmError, match="exceed"):
        Platform(n_blocks=ROOT_BITS + 1)


def test_failed_commit_leaves_last_committed_state():
    p = Platform(n_blocks=4)
    os_, s = p.boot()
    with s.transaction():
        s.write(0, b"v1")
    os_.behaviour.refuse_writes = True
    s.begin(); s.write(0, b"v2"); s.write(1, b"x")
    with pytest.raises(StorageUnavailable):
        s.commit()
    os_.behaviour.refuse_writes = False
    assert s.read(0)[:2] == b"v1" and s.read(1) == bytes(PAYLOAD)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=700), min_size=1, max_size=6))
def test_nvstore_round_trips_any_blob(blobs):
    p = Platform(n_blocks=5)
    _, s = p.boot()
    nv = RpmbNVStore(s)
    assert nv.load() is None
    for b in blobs:
        nv.save(b)
        assert nv.load() == b
    _, s = p.boot()
    assert RpmbNVStore(s).load() == blobs[-1]


def test_nvstore_rejects_oversized_blob():
    p = Platform(n_blocks=2)
    _, s = p.boot()
    with pytest.raises(FtpmError, match="exceed"):
        RpmbNVStore(s).save(b"x" * (2 * PAYLOAD))


@pytest.mark.parametrize("levels,fanout,blocks", [(1, None, [0]), (1, None, [0, 3, 7]), (2, 4, [0, 1]),
                                                  (2, 4, [0, 5, 9, 15])])
def test_commit_cost_model_equals_simulation(clock, levels, fanout, blocks):
    """With a spread-free profile the analytic commit cost and the charged cost agree exactly."""
    p = Platform(n_blocks=16, levels=levels, fanout=fanout, clock=clock)
    _, s = p.boot()
    with s.transaction():  # warm: every block cached, write counter known
        for i in range(16):
            s.write(i, b"warm")
    before = dict(clock.by_component)
    t0 = clock.now_ms
    s.begin()
    for i in blocks:
        s.write(i, b"new value %d" % i)
    frames = s.commit()
    charged = {k: v - before.get(k, 0.0) for k, v in clock.by_component.items() if v - before.get(k, 0.0)}
    bitmaps = len({i // fanout for i in blocks}) if levels == 2 else 0
    terms = commit_terms(len(blocks), bitmaps)
    assert frames == terms["rpmb_frame_write"]
    model = {k: n * clock.profile.mean(k) for k, n in terms.items()}
    assert charged == pytest.approx(model)
    assert clock.now_ms - t0 == pytest.approx(sum(model.values()))


def test_os_that_programs_its_own_key_first_gets_denial_of_service_not_control():
    from trustlab.devices.ftpm import rpmb_frame as rf
    from trustlab.devices.ftpm.errors import RpmbError
    p = Platform(n_blocks=4)
    p.device.transfer_in([rf.Frame(req_resp=rf.REQ_KEY_PROGRAM, key_mac=b"\x66" * 32).to_bytes()])
    with pytest.raises(RpmbError, match="MAC"):
        p.boot()  # the TEE notices that the eMMC does not hold its key and stores nothing


def test_leaked_rpmb_key_allows_rollback_but_not_forgery():
    """The threat-model boundary: RPMB's replay protection rests on the key staying secret.

    An attacker who captured the key (it crosses the normal world once, at provisioning)
    can write old ciphertext back -- a rollback the TEE cannot detect -- but AES-GCM under
    the TEE-only key still stops forged or modified state.
    """
    from trustlab.devices.ftpm import rpmb_frame as rf
    from trustlab.devices.ftpm.rpmb_frame import Frame
    p = Platform(n_blocks=4)
    os_, s = p.boot()
    with s.transaction():
        s.write(0, b"counter=1")
    old_image = {a: p.device.peek(a) for a in range(p.device.size_blocks)}
    with s.transaction():
        s.write(0, b"counter=2")
    key = p.keys.rpmb_key  # what the OS saw in the key-programming frame
    for addr, data in old_image.items():  # rewrite the old image with fresh, valid counters
        req = rf.seal(key, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=data, write_counter=p.device.write_counter,
                                  address=addr, block_count=1)])
        assert os_.inject(req) == rf.RES_OK
    _, s = p.boot()
    assert s.read(0)[:9] == b"counter=1"  # rolled back
    addr = s._data_addr(0, s._bits[0] & 1)  # the committed copy of block 0
    forged = bytearray(p.device.peek(addr))
    forged[20] ^= 1
    req = rf.seal(key, [Frame(req_resp=rf.REQ_AUTH_WRITE, data=bytes(forged), write_counter=p.device.write_counter,
                              address=addr, block_count=1)])
    assert os_.inject(req) == rf.RES_OK
    _, s = p.boot()
    with pytest.raises(StorageCorrupt):
        s.read(0)
