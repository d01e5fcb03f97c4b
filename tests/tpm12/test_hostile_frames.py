"""Hostile frames: mutated copies of real commands must get a TPM error code, never an internal one.

The engine turns a Python exception inside a handler into TPM_FAIL (a chip always answers);
such an answer is a bug in our parsing or checks, so every mutation here must be answered
without ``last_internal_error`` being set.
"""

from __future__ import annotations

import random
import shutil
import struct

import pytest

from trustlab.devices.tpm12 import MemoryNVStore
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.engine import HEADER, Engine
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from trustlab.devices.tpm12.primitives import KeyPool

from . import ours_scenario
from .conformance_cases import cap, frame, u32
from .conftest import POOL
from .differential import pair


def _recorded_frames() -> tuple[list[bytes], list[Engine]]:
    frames: list[bytes] = []
    engines: list[Engine] = []
    original = Engine.execute

    def record(self, frame: bytes) -> bytes:
        frames.append(bytes(frame))
        if self not in engines:
            engines.append(self)
        return original(self, frame)

    Engine.execute = record  # type: ignore[method-assign]
    try:
        ours_scenario.run(Clock(load("sim-2010")), POOL)
    finally:
        Engine.execute = original  # type: ignore[method-assign]
    return frames, engines


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    f = bytearray(frame)
    m = rng.random()
    if m < 0.4:
        for _ in range(rng.randrange(1, 4)):
            f[rng.randrange(HEADER, len(f))] = rng.getrandbits(8)
    elif m < 0.6:
        f = f[:rng.randrange(HEADER, len(f))]
    elif m < 0.8 and len(f) > HEADER + 4:
        at = rng.randrange(HEADER, len(f) - 4)
        f[at:at + 4] = struct.pack(">I", rng.choice([0, 1, 2, 3, 128, 4096, 65536, 0x7FFFFFFF, 0xFFFFFFFF]))
    else:
        at = rng.randrange(HEADER, len(f) + 1)
        f[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40)))
    f[2:6] = struct.pack(">I", len(f))  # a well-formed size, so the handler's parser is what is tested
    return bytes(f)


def test_mutated_commands_get_tpm_error_codes_not_internal_errors():
    frames, engines = _recorded_frames()
    frames = [f for f in frames if len(f) > HEADER]
    rng = random.Random(12)
    internal = set()
    for engine in engines:  # every life stage: unowned, owned, after power cycles
        for frame in frames:
            for _ in range(3):
                engine.last_internal_error = None
                rsp = engine.execute(_mutate(rng, frame))
                assert len(rsp) >= HEADER
                if engine.last_internal_error is not None:
                    internal.add(f"{engine._peek_name(frame)}: {engine.last_internal_error!r}")
    assert not internal, sorted(internal)


def test_migration_blob_on_an_unowned_tpm_is_not_an_internal_error():
    """No owner, so no tpmProof: the migrationKeyAuth check used to hash None (TPM_FAIL)."""
    engine = Engine(Clock(load("sim-2010")), MemoryNVStore(), POOL, ek=False)
    mka = (struct.pack(">IHHI", C.TPM_ALG_RSA, 3, 1, 12) + struct.pack(">III", 2048, 2, 0)
           + struct.pack(">I", 256) + bytes(256) + struct.pack(">H", C.TPM_MS_MIGRATE) + bytes(20))
    for ordinal, extra in ((C.ORD["TPM_CreateMigrationBlob"], b""),
                           (C.ORD["TPM_CMK_CreateBlob"], bytes(20) + struct.pack(">I", 0) * 3)):
        params = struct.pack(">IH", C.TPM_KH_SRK, C.TPM_MS_MIGRATE) + mka + extra + struct.pack(">I", 0)
        auths = 2 if ordinal == C.ORD["TPM_CreateMigrationBlob"] else 1
        trailer = (struct.pack(">I", 0x02000000) + bytes(20) + b"\x01" + bytes(20)) * auths
        tag = C.TPM_TAG_RQU_AUTH2_COMMAND if auths == 2 else C.TPM_TAG_RQU_AUTH1_COMMAND
        body = params + trailer
        rsp = engine.execute(struct.pack(">HII", tag, HEADER + len(body), ordinal) + body)
        assert engine.last_internal_error is None
        assert struct.unpack(">I", rsp[6:10])[0] not in (C.TPM_SUCCESS, C.RC["TPM_FAIL"])


@pytest.mark.swtpm
@pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")
def test_mutated_unauthenticated_commands_answer_as_libtpms():
    """The same mutated frames (truncated, bytes flipped, bytes appended, tag changed; size header
    kept consistent) to our engine and to libtpms: the same return code and response length."""
    ours, libtpms = pair(KeyPool())
    try:
        for side in (ours, libtpms):
            side.execute(frame(C.ORD["TPM_Startup"], struct.pack(">H", C.TPM_ST_CLEAR)))
        o = C.ORD
        bases = [cap(C.TPM_CAP_PROPERTY, u32(0x101)), cap(0x06), cap(0x1A), cap(0x04, u32(0x20)),
                 frame(o["TPM_PCRRead"], u32(3)), frame(o["TPM_Extend"], u32(5) + bytes(range(20))),
                 frame(o["TPM_GetRandom"], u32(16)), frame(o["TPM_ReadPubek"], bytes(20)),
                 frame(o["TPM_GetTicks"]), frame(o["TPM_NV_ReadValue"], u32(0x00011000) + u32(0) + u32(4)),
                 frame(o["TPM_ReadCounter"], u32(1)), frame(o["TPM_FlushSpecific"], u32(0x01000000) + u32(1)),
                 frame(o["TPM_PCR_Reset"], struct.pack(">H", 3) + b"\x00\x00\x01")]
        rng = random.Random(16)
        differ = []
        for base in bases:
            for _ in range(12):
                f = bytearray(base)
                m = rng.random()
                if m < 0.35 and len(f) > HEADER:
                    f = f[:rng.randrange(HEADER, len(f))]
                elif m < 0.7 and len(f) > HEADER:
                    f[rng.randrange(HEADER, len(f))] = rng.getrandbits(8)
                elif m < 0.85:
                    f += bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 9)))
                else:
                    f[0:2] = struct.pack(">H", rng.choice([0xC2, 0xC3, 0xC4, 0x00]))
                f[2:6] = struct.pack(">I", len(f))
                a, b = ours.execute(bytes(f)), libtpms.execute(bytes(f))
                if a[6:10] != b[6:10] or len(a) != len(b):
                    differ.append((bytes(f).hex(), a[:10].hex(), len(a), b[:10].hex(), len(b)))
        assert not differ, differ[:5]
    finally:
        libtpms.target.close()
