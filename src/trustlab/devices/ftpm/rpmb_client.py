"""The secure world's RPMB driver: builds sealed requests, checks every response.

This is where replay protection is *enforced* on the TEE side: a response is
accepted only if its MAC verifies under the RPMB key, it answers the request
type asked, it carries the nonce the TEE just chose (reads) or the counter the
TEE expects next (writes), and its result is OK. Anything else is refused, and
the cached write counter is dropped so the next write re-synchronises with the
device instead of trusting memory.
"""

from __future__ import annotations

import os

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.errors import RpmbError
from trustlab.devices.ftpm.normal_world import NormalWorld
from trustlab.devices.ftpm.rpmb_frame import Frame
from trustlab.timing.clock import Clock


class RpmbClient:
    def __init__(self, os_: NormalWorld, key: bytes, *, clock: Clock | None = None,
                 nonce_source=os.urandom) -> None:
        self.os = os_
        self._key = key
        self.clock = clock
        self._counter: int | None = None
        self._nonce = nonce_source
        self.stale_responses_refused = 0

    def _charge_mac(self, frames: int) -> None:
        if self.clock is not None:
            self.clock.charge("tee_hmac_frame", frames)

    # ---- key programming (first boot) -------------------------------------

    def program_key(self) -> None:
        req = Frame(req_resp=rf.REQ_KEY_PROGRAM, key_mac=self._key).to_bytes()
        resp = Frame.from_bytes(self.os.rpmb([req])[0])
        if resp.req_resp != rf.RESP_KEY_PROGRAM or resp.result != rf.RES_OK:
            raise RpmbError(f"RPMB key programming failed: {rf.result_name(resp.result)}", resp.result)

    # ---- counter -----------------------------------------------------------------

    def read_counter(self) -> int:
        nonce = self._nonce(rf.NONCE_SIZE)
        raw = self.os.rpmb([Frame(req_resp=rf.REQ_READ_COUNTER, nonce=nonce).to_bytes()])
        resp = self._check(raw, rf.RESP_READ_COUNTER, nonce=nonce)
        self._counter = resp[0].write_counter
        return self._counter

    @property
    def cached_counter(self) -> int | None:
        return self._counter

    # ---- data ----------------------------------------------------------------------

    def write(self, address: int, blocks: list[bytes]) -> int:
        """Authenticated write of consecutive blocks; returns the new counter."""
        if self._counter is None:
            self.read_counter()
        counter = self._counter
        assert counter is not None
        frames = [Frame(req_resp=rf.REQ_AUTH_WRITE, data=b, write_counter=counter, address=address,
                        block_count=len(blocks)) for b in blocks]
        self._charge_mac(len(frames))
        request = rf.seal(self._key, frames)
        self._counter = None  # unknown until the device confirms
        raw = self.os.rpmb(request)
        resp = self._check(raw, rf.RESP_AUTH_WRITE)[0]
        if resp.address != address or resp.write_counter != counter + 1:
            self.stale_responses_refused += 1
            raise RpmbError(f"RPMB write response for address {resp.address}, counter {resp.write_counter} "
                            f"does not confirm the write at {address}, counter {counter}")
        self._counter = counter + 1
        return self._counter

    def read(self, address: int, count: int = 1) -> list[bytes]:
        nonce = self._nonce(rf.NONCE_SIZE)
        req = Frame(req_resp=rf.REQ_AUTH_READ, nonce=nonce, address=address, block_count=count)
        resp = self._check(self.os.rpmb([req.to_bytes()], count), rf.RESP_AUTH_READ, nonce=nonce)
        if len(resp) != count or any(f.address != address for f in resp):
            raise RpmbError(f"RPMB read response does not answer the read of {count} block(s) at {address}")
        return [f.data for f in resp]

    # ---- checks ---------------------------------------------------------------------

    def _check(self, raw: list[bytes], kind: int, *, nonce: bytes | None = None) -> list[Frame]:
        frames = [Frame.from_bytes(r) for r in raw]
        last = frames[-1]
        if last.result & 0x7F == rf.RES_NO_KEY:
            raise RpmbError("RPMB authentication key not yet programmed", last.result)
        self._charge_mac(len(frames))
        if not rf.verify(self._key, raw):
            self._counter = None
            self.stale_responses_refused += 1
            raise RpmbError("RPMB response MAC does not verify (forged or corrupted frame)", rf.RES_AUTH_FAILURE)
        if last.req_resp != kind:
            self._counter = None
            raise RpmbError(f"RPMB response type 0x{last.req_resp:04x}, expected 0x{kind:04x}")
        if nonce is not None and any(f.nonce != nonce for f in frames):
            self._counter = None
            self.stale_responses_refused += 1
            raise RpmbError("RPMB response nonce does not match the request (replayed response)")
        if last.result & 0x7F != rf.RES_OK:
            self._counter = None
            raise RpmbError(f"RPMB device refused: {rf.result_name(last.result)}", last.result)
        return frames
