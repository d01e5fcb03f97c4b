"""The eMMC side of RPMB: an authenticated, replay-protected block store.

The device holds an authentication key programmed exactly once, a 32-bit
write counter, and 256-byte data blocks. It accepts a write only when the
request's HMAC verifies under the key *and* carries the current counter value;
each accepted write increments the counter, so a captured request can never be
replayed once any later write has happened. Reads are answered with the
requester's nonce inside the MAC, so stale responses cannot be passed off as
fresh. Results follow the JEDEC eMMC result codes.

Power loss is modelled at the granularity the spec guarantees: a request is
acted upon only once all of its frames have arrived (a truncated transfer is
dropped), and a complete authenticated write is a reliable write -- the blocks
and the counter change together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.rpmb_frame import Frame
from trustlab.timing.clock import Clock

COUNTER_MAX = 0xFFFFFFFF
MAX_BLOCKS = 0x10000  # the address field is 16 bits: 65,536 half-sectors = 16 MB


@dataclass
class RpmbStats:
    """What the device did, for the storage cost per command."""

    frames_written: int = 0
    frames_read: int = 0
    writes_accepted: int = 0
    writes_refused: dict[int, int] = field(default_factory=dict)


class RpmbDevice:
    """An RPMB partition of ``size_blocks`` 256-byte blocks.

    ``rel_wr_sec_c`` is the largest number of frames one authenticated write
    may carry (the EXT_CSD REL_WR_SEC_C field, in 512-byte sectors = 2 frames).
    """

    def __init__(self, size_blocks: int = 1024, *, rel_wr_sec_c: int = 1,
                 clock: Clock | None = None, initial_counter: int = 0) -> None:
        if not 1 <= size_blocks <= MAX_BLOCKS:
            raise ValueError(f"RPMB size must be 1..{MAX_BLOCKS} blocks, got {size_blocks}")
        self.size_blocks = size_blocks
        self.max_frames = 2 * rel_wr_sec_c
        self.clock = clock
        self._key: bytes | None = None
        self.write_counter = initial_counter
        self._blocks: dict[int, bytes] = {}
        self._response: list[bytes] = []
        self._result_pending: list[bytes] = []
        self.stats = RpmbStats()

    # ---- persistent state (for snapshots in crash testing) ----------------

    def snapshot(self) -> tuple:
        return (self._key, self.write_counter, dict(self._blocks))

    def restore(self, snap: tuple) -> None:
        self._key, self.write_counter, blocks = snap
        self._blocks = dict(blocks)
        self._response = []
        self._result_pending = []

    @property
    def key_programmed(self) -> bool:
        return self._key is not None

    def peek(self, address: int) -> bytes:
        """Raw block contents, as an attacker with a chip reader would see them."""
        return self._blocks.get(address, bytes(rf.DATA_SIZE))

    # ---- the bus -----------------------------------------------------------

    def power_loss(self) -> None:
        """Volatile state (pending responses, partial transfers) is gone."""
        self._response = []
        self._result_pending = []

    def transfer_in(self, frames: list[bytes]) -> None:
        """A complete CMD25 data transfer of request frames."""
        if not frames or any(len(f) != rf.FRAME_SIZE for f in frames):
            self._response = [self._bare(0, rf.RES_GENERAL_FAILURE)]
            return
        first = Frame.from_bytes(frames[0])
        kind = first.req_resp
        if kind == rf.REQ_RESULT_READ:
            self._response, self._result_pending = self._result_pending, []
            if not self._response:
                self._response = [self._bare(0, rf.RES_GENERAL_FAILURE)]
        elif kind == rf.REQ_KEY_PROGRAM:
            self._result_pending = [self._key_program(first)]
        elif kind == rf.REQ_AUTH_WRITE:
            self._result_pending = [self._auth_write(frames)]
        elif kind == rf.REQ_READ_COUNTER:
            self._response = [self._read_counter(first)]
        elif kind == rf.REQ_AUTH_READ:
            self._response = self._auth_read(first)
        else:
            self._response = [self._bare(0, rf.RES_GENERAL_FAILURE)]

    def transfer_partial(self, nbytes: int) -> None:
        """A transfer cut short: the device never sees a complete request."""
        self._response = [self._bare(0, rf.RES_GENERAL_FAILURE)]

    def transfer_out(self) -> list[bytes]:
        """A CMD18 read of the prepared response frames."""
        out, self._response = self._response, []
        if not out:
            out = [self._bare(0, rf.RES_GENERAL_FAILURE)]
        self.stats.frames_read += len(out)
        if self.clock is not None:
            self.clock.charge("rpmb_frame_read", len(out))
        return out

    # ---- request handlers ----------------------------------------------------

    def _expired(self) -> int:
        return rf.RES_COUNTER_EXPIRED if self.write_counter >= COUNTER_MAX else 0

    def _bare(self, kind: int, result: int) -> bytes:
        return Frame(req_resp=kind, result=result).to_bytes()

    def _signed(self, frames: list[Frame]) -> list[bytes]:
        if self._key is None:
            return [f.to_bytes() for f in frames]
        return rf.seal(self._key, frames)

    def _key_program(self, req: Frame) -> bytes:
        if self._key is not None:
            result = rf.RES_WRITE_FAILURE  # spec: programming an already programmed key fails
        else:
            self._key = req.key_mac
            result = rf.RES_OK
        return Frame(req_resp=rf.RESP_KEY_PROGRAM, result=result).to_bytes()

    def _auth_write(self, raws: list[bytes]) -> bytes:
        frames = [Frame.from_bytes(r) for r in raws]
        first = frames[0]

        def respond(result: int) -> bytes:
            if result != rf.RES_OK:
                self.stats.writes_refused[result] = self.stats.writes_refused.get(result, 0) + 1
            resp = Frame(req_resp=rf.RESP_AUTH_WRITE, write_counter=self.write_counter,
                         address=first.address, result=result | self._expired())
            return self._signed([resp])[0]

        if self._key is None:
            return respond(rf.RES_NO_KEY)
        if self.write_counter >= COUNTER_MAX:
            return respond(rf.RES_WRITE_FAILURE)
        if not rf.verify(self._key, raws):
            return respond(rf.RES_AUTH_FAILURE)
        if any(f.write_counter != first.write_counter or f.address != first.address
               or f.block_count != first.block_count or f.req_resp != rf.REQ_AUTH_WRITE for f in frames):
            return respond(rf.RES_GENERAL_FAILURE)
        if first.write_counter != self.write_counter:
            return respond(rf.RES_COUNTER_FAILURE)
        if first.block_count != len(frames) or len(frames) > self.max_frames:
            return respond(rf.RES_GENERAL_FAILURE)
        if first.address + len(frames) > self.size_blocks:
            return respond(rf.RES_ADDRESS_FAILURE)
        # reliable write: all blocks and the counter change together
        for i, f in enumerate(frames):
            self._blocks[first.address + i] = f.data
        self.write_counter += 1
        self.stats.frames_written += len(frames)
        self.stats.writes_accepted += 1
        if self.clock is not None:
            self.clock.charge("rpmb_frame_write", len(frames))
        return respond(rf.RES_OK)

    def _read_counter(self, req: Frame) -> bytes:
        if self._key is None:
            return Frame(req_resp=rf.RESP_READ_COUNTER, nonce=req.nonce, result=rf.RES_NO_KEY).to_bytes()
        resp = Frame(req_resp=rf.RESP_READ_COUNTER, nonce=req.nonce, write_counter=self.write_counter,
                     result=rf.RES_OK | self._expired())
        return self._signed([resp])[0]

    def _auth_read(self, req: Frame) -> list[bytes]:
        count = max(1, req.block_count)
        if self._key is None:
            return [Frame(req_resp=rf.RESP_AUTH_READ, nonce=req.nonce, address=req.address,
                          result=rf.RES_NO_KEY).to_bytes()]
        if req.address + count > self.size_blocks:
            return self._signed([Frame(req_resp=rf.RESP_AUTH_READ, nonce=req.nonce, address=req.address,
                                       block_count=count, result=rf.RES_ADDRESS_FAILURE)])
        frames = [Frame(req_resp=rf.RESP_AUTH_READ, data=self.peek(req.address + i), nonce=req.nonce,
                        address=req.address, block_count=count, result=rf.RES_OK | self._expired())
                  for i in range(count)]
        return self._signed(frames)
