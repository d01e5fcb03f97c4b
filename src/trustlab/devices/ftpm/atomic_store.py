"""Atomic multi-block commits on RPMB: committed + shadow copies and a bit vector.

The fTPM's persistent state is a sequence of logical blocks. Each logical
block *i* has two physical copies; a bit vector in the first RPMB block says
which copy is the committed one (bit 0: copy A, bit 1: copy B). A transaction
caches its writes in TEE memory; ``commit`` writes every changed block to its
*shadow* (non-committed) copy and then flips all their bits with one write of
the bit-vector block. RPMB writes are reliable writes, so the single root write
is the commit point: a crash before it leaves the old state, after it the new
one, never a mix.

One bit-vector block bounds the state (``capacity``); an extra level of
indirection -- the root's bits select the committed copy of *bitmap* blocks,
whose bits select data copies -- raises the bound by a factor of a block's
bit count while keeping the single-write commit (changed bitmap blocks are
shadow-written first, then the root flips them). The 16-bit RPMB address field
(16 MB partitions) is the real limit of the two-level scheme; ``capacity``
reports both.

Blocks are encrypted and authenticated with AES-GCM under a TEE-only key; the
associated data binds each ciphertext to its logical index and copy, so a block
cannot be moved to another slot.
"""

from __future__ import annotations

import os
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from trustlab.devices.ftpm.errors import FtpmError, StorageCorrupt
from trustlab.devices.ftpm.rpmb import MAX_BLOCKS
from trustlab.devices.ftpm.rpmb_client import RpmbClient
from trustlab.devices.ftpm.rpmb_frame import DATA_SIZE
from trustlab.timing.clock import Clock

NONCE = 12
TAG = 16
PAYLOAD = DATA_SIZE - NONCE - TAG  # 228 plaintext bytes per logical block
MAGIC = b"TLAS"
_HEADER = struct.Struct(">4sBBHQII")  # magic, version, levels, reserved, generation, n_logical, fanout
ROOT_BITS = (DATA_SIZE - _HEADER.size) * 8  # bits left in the root block after its header
BITMAP_BITS = DATA_SIZE * 8  # a level-2 bitmap block is all bits


@dataclass(frozen=True)
class Capacity:
    levels: int
    logical_blocks: int          # by the bit-vector arithmetic
    state_bytes: int             # logical blocks x plaintext payload
    physical_blocks: int         # root + bitmaps + two copies of every block
    address_limited_blocks: int  # logical blocks that fit the 16-bit RPMB address space


def capacity(levels: int, fanout: int | None = None) -> Capacity:
    """How much state the scheme can address, and what the RPMB address space allows."""
    if levels == 1:
        n, meta = ROOT_BITS, 1
        fit = min(n, (MAX_BLOCKS - 1) // 2)
    elif levels == 2:
        f = fanout or BITMAP_BITS
        n = ROOT_BITS * f
        meta = 1 + 2 * ROOT_BITS
        # largest n with 1 + 2*ceil(n/f) + 2n <= MAX_BLOCKS
        fit = 0
        lo, hi = 0, n
        while lo <= hi:
            mid = (lo + hi) // 2
            if 1 + 2 * -(-mid // f) + 2 * mid <= MAX_BLOCKS:
                fit, lo = mid, mid + 1
            else:
                hi = mid - 1
    else:
        raise ValueError("levels must be 1 or 2")
    return Capacity(levels=levels, logical_blocks=n, state_bytes=n * PAYLOAD,
                    physical_blocks=meta + 2 * n, address_limited_blocks=fit)


def commit_terms(data_blocks: int, bitmap_blocks: int = 0) -> dict[str, float]:
    """Analytic cost of one commit, as ``{component: count}`` of the storage profile.

    Each authenticated write is one RPMB request: the TEE MACs the request
    frame, the eMMC programs it, the result frame is read back and its MAC
    verified; data blocks are also AES-GCM sealed. A commit writes the changed
    data blocks, the changed bitmap blocks (two-level store) and the root. The
    functional store charges exactly these (a test holds them equal).
    """
    writes = data_blocks + bitmap_blocks + 1 if data_blocks else 0
    terms = {"rpmb_request": writes, "rpmb_frame_write": writes, "rpmb_frame_read": writes,
             "tee_hmac_frame": 2 * writes, "tee_aead_block": data_blocks}
    return {k: float(v) for k, v in terms.items() if v}


def _get_bit(bits: bytearray, i: int) -> int:
    return (bits[i >> 3] >> (i & 7)) & 1


def _flip_bit(bits: bytearray, i: int) -> None:
    bits[i >> 3] ^= 1 << (i & 7)


class AtomicStore:
    """``n_blocks`` logical blocks of :data:`PAYLOAD` bytes with atomic commits."""

    def __init__(self, client: RpmbClient, aead_key: bytes, n_blocks: int, *, levels: int = 1,
                 fanout: int | None = None, base: int = 0, clock: Clock | None = None) -> None:
        cap = capacity(levels, fanout)
        if not 1 <= n_blocks <= cap.logical_blocks:
            raise FtpmError(f"atomic store: {n_blocks} blocks exceed the {levels}-level bit vector "
                            f"(at most {cap.logical_blocks})")
        self.client = client
        self.n = n_blocks
        self.levels = levels
        self.fanout = (fanout or BITMAP_BITS) if levels == 2 else n_blocks
        self.m = -(-n_blocks // self.fanout) if levels == 2 else 0  # bitmap blocks
        self.base = base
        self.clock = clock
        self._aead = AESGCM(aead_key)
        self.generation = 0
        self._root_bits = bytearray(ROOT_BITS // 8)
        self._bits = bytearray(-(-n_blocks // 8))  # data-copy selection bits
        self._committed: dict[int, bytes] = {}     # plaintext cache of committed blocks
        self._raw: dict[int, bytes] = {}           # prefetched ciphertext of committed blocks
        self._pending: dict[int, bytes] | None = None
        self._mounted = False
        self.commits = 0

    # ---- layout ------------------------------------------------------------------

    @property
    def physical_blocks(self) -> int:
        return 1 + 2 * self.m + 2 * self.n

    def _data_addr(self, i: int, copy: int) -> int:
        return self.base + 1 + 2 * self.m + copy * self.n + i

    def _bitmap_addr(self, j: int, copy: int) -> int:
        return self.base + 1 + copy * self.m + j

    def _root_block(self, generation: int, root_bits: bytes) -> bytes:
        header = _HEADER.pack(MAGIC, 1, self.levels, 0, generation, self.n, self.fanout)
        return header + bytes(root_bits)

    def _bitmap_slice(self, bits: bytearray, j: int) -> bytes:
        out = bytearray(DATA_SIZE)
        for k in range(self.fanout):
            i = j * self.fanout + k
            if i >= self.n:
                break
            if _get_bit(bits, i):
                out[k >> 3] |= 1 << (k & 7)
        return bytes(out)

    # ---- mount / format --------------------------------------------------------------

    def format(self) -> None:
        """Write an empty root (first boot); unwritten data blocks read as zeros."""
        self._root_bits = bytearray(ROOT_BITS // 8)
        self._bits = bytearray(len(self._bits))
        self.generation = 0
        self.client.write(self.base, [self._root_block(0, self._root_bits)])
        self._committed.clear()
        self._raw = {}
        self._pending = None
        self._mounted = True

    def mount(self) -> None:
        """Read the root (and bitmaps): the committed state is what they select."""
        root = self.client.read(self.base)[0]
        magic, version, levels, _, generation, n, fanout = _HEADER.unpack(root[:_HEADER.size])
        if magic != MAGIC:
            raise StorageCorrupt(f"RPMB block {self.base} holds no atomic-store root (not formatted)")
        if (version, levels, n, fanout) != (1, self.levels, self.n, self.fanout):
            raise StorageCorrupt(f"atomic store layout mismatch: stored levels={levels} blocks={n} "
                                 f"fanout={fanout}, expected levels={self.levels} blocks={self.n} fanout={self.fanout}")
        self.generation = generation
        self._root_bits = bytearray(root[_HEADER.size:])
        if self.levels == 1:
            self._bits = bytearray(self._root_bits[:len(self._bits)])
        else:
            bits = bytearray(len(self._bits))
            for j in range(self.m):
                page = self.client.read(self._bitmap_addr(j, _get_bit(self._root_bits, j)))[0]
                for k in range(self.fanout):
                    i = j * self.fanout + k
                    if i >= self.n:
                        break
                    if (page[k >> 3] >> (k & 7)) & 1:
                        bits[i >> 3] |= 1 << (i & 7)
            self._bits = bits
        self._committed.clear()
        self._pending = None
        self._mounted = True
        self._prefetch()

    PREFETCH_FRAMES = 256

    def _prefetch(self) -> None:
        """Read both copies of every data block in one multi-block authenticated read.

        Small states (the fTPM's few KB) are read once at mount instead of one
        RPMB round trip per block; larger stores fall back to reading on demand.
        """
        if 2 * self.n > self.PREFETCH_FRAMES:
            return
        raws = self.client.read(self._data_addr(0, 0), 2 * self.n)
        self._raw = {i: raws[_get_bit(self._bits, i) * self.n + i] for i in range(self.n)}

    def _ensure_mounted(self) -> None:
        if not self._mounted:
            self.mount()

    # ---- blocks ---------------------------------------------------------------------

    def _aad(self, i: int, copy: int) -> bytes:
        return MAGIC + struct.pack(">IIB", self.base, i, copy)

    def _load(self, i: int) -> bytes:
        if i in self._committed:
            return self._committed[i]
        copy = _get_bit(self._bits, i)
        raw = self._raw.pop(i, None)
        if raw is None:
            raw = self.client.read(self._data_addr(i, copy))[0]
        if raw == bytes(DATA_SIZE):
            plain = bytes(PAYLOAD)  # never written: only the TEE can write RPMB
        else:
            if self.clock is not None:
                self.clock.charge("tee_aead_block")
            try:
                plain = self._aead.decrypt(raw[:NONCE], raw[NONCE:], self._aad(i, copy))
            except InvalidTag:
                raise StorageCorrupt(f"state block {i} (copy {copy}) fails authentication") from None
        self._committed[i] = plain
        return plain

    def _seal(self, i: int, copy: int, plain: bytes) -> bytes:
        if self.clock is not None:
            self.clock.charge("tee_aead_block")
        nonce = os.urandom(NONCE)
        return nonce + self._aead.encrypt(nonce, plain, self._aad(i, copy))

    def _check_index(self, i: int) -> None:
        if not 0 <= i < self.n:
            raise FtpmError(f"atomic store: block {i} out of range 0..{self.n - 1}")

    def read(self, i: int) -> bytes:
        self._check_index(i)
        self._ensure_mounted()
        if self._pending is not None and i in self._pending:
            return self._pending[i]
        return self._load(i)

    # ---- transactions -------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._pending is not None

    def begin(self) -> None:
        if self._pending is not None:
            raise FtpmError("atomic store: a transaction is already open")
        self._ensure_mounted()
        self._pending = {}

    def write(self, i: int, data: bytes) -> None:
        """Cache a block write in the open transaction (nothing reaches RPMB yet)."""
        self._check_index(i)
        if self._pending is None:
            raise FtpmError("atomic store: write outside a transaction (call begin first)")
        if len(data) > PAYLOAD:
            raise FtpmError(f"atomic store: block {i} data is {len(data)} bytes, at most {PAYLOAD}")
        self._pending[i] = bytes(data).ljust(PAYLOAD, b"\0")

    def abort(self) -> None:
        """Forget cached writes; shadows already written stay shadows (harmless)."""
        self._pending = None

    def commit(self) -> int:
        """Write shadows, then flip their bits in one root write. Returns frames written.

        If any write fails the transaction is aborted and the in-memory view is
        dropped: the outcome of a root write whose response was lost is unknown
        to the TEE, so the next access re-reads the root (old or new, never torn).
        """
        if self._pending is None:
            raise FtpmError("atomic store: commit without a transaction")
        pending, self._pending = self._pending, None
        changed = {i: d for i, d in sorted(pending.items()) if self._load_quiet(i) != d}
        if not changed:
            return 0
        frames = 0
        try:
            new_bits = bytearray(self._bits)
            for i, data in changed.items():
                shadow = 1 - _get_bit(self._bits, i)
                self.client.write(self._data_addr(i, shadow), [self._seal(i, shadow, data)])
                _flip_bit(new_bits, i)
                frames += 1
            new_root = bytearray(self._root_bits)
            if self.levels == 1:
                new_root[:len(new_bits)] = new_bits
            else:
                for j in sorted({i // self.fanout for i in changed}):
                    shadow = 1 - _get_bit(self._root_bits, j)
                    self.client.write(self._bitmap_addr(j, shadow), [self._bitmap_slice(new_bits, j)])
                    _flip_bit(new_root, j)
                    frames += 1
            self.client.write(self.base, [self._root_block(self.generation + 1, new_root)])
            frames += 1
        except BaseException:
            self._mounted = False  # resynchronise from the device on next access
            self._committed.clear()
            self._raw.clear()
            raise
        self.generation += 1
        self._bits = new_bits
        self._root_bits = new_root
        self._committed.update(changed)
        self.commits += 1
        return frames

    def _load_quiet(self, i: int) -> bytes | None:
        try:
            return self._load(i)
        except StorageCorrupt:
            return None

    @contextmanager
    def transaction(self) -> Iterator["AtomicStore"]:
        """``with store.transaction():`` commits on success, aborts on any exception."""
        self.begin()
        try:
            yield self
        except BaseException:
            self.abort()
            raise
        self.commit()

    # ---- byte-string convenience ----------------------------------------------------------

    def read_bytes(self, first: int, count: int) -> bytes:
        return b"".join(self.read(first + k) for k in range(count))

    def write_bytes(self, first: int, data: bytes, count: int) -> None:
        """Lay ``data`` over ``count`` blocks from ``first`` (zero-padded)."""
        if len(data) > count * PAYLOAD:
            raise FtpmError(f"atomic store: {len(data)} bytes do not fit {count} blocks of {PAYLOAD}")
        for k in range(count):
            self.write(first + k, data[k * PAYLOAD:(k + 1) * PAYLOAD])
