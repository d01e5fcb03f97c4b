"""cost.Pricer (the proxy's cached pricing) gives exactly cost.assess's answer, command by command."""

from __future__ import annotations

import random
import struct

from trustlab.devices.tpm2 import cost, objects
from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.devices.tpm2.commands import COMMAND_CODES
from trustlab.timing.registry import load


def _frames(rng: random.Random):
    handles = [0x80000000, 0x80000001, 0x81000001, 0x40000001, 0x02000000]
    for code in sorted(COMMAND_CODES) + [0x1FFF, 0x20000001]:
        for _ in range(4):
            body = b"".join(struct.pack(">I", rng.choice(handles)) for _ in range(rng.randrange(3)))
            body += rng.randbytes(rng.randrange(0, 80))
            command = tpm2wire.build_command(code, body)
            for rc in (0, 0x101, 0x98E):
                response = struct.pack(">HII", 0x8001, 10 + 16, rc) + rng.randbytes(16)
                yield command, response
    yield b"\x80\x01\x00", b"\x80\x01"  # short frames: code 0, rc TPM_RC_FAILURE


def test_pricer_equals_assess_on_every_command_code():
    rng = random.Random(7)
    table = objects.ObjectTable()
    table.by_handle.update({0x80000000: "rsa2048", 0x80000001: "ecc256", 0x81000001: "ecc256"})
    for name in ("nuvoton-npct750-wolftpm", "infineon-2010"):  # a tpm2 profile, and one lacking its terms
        profile = load(name)
        pricer = cost.Pricer(profile)
        for command, response in _frames(rng):
            for _ in range(2):  # the second time from the cached plan
                got = pricer.assess(command, response, table)
                want = cost.assess(command, response, table, profile)
                assert got == want, (command.hex(), response.hex())
                assert list(got.terms) == list(want.terms)  # the trace's key order too
