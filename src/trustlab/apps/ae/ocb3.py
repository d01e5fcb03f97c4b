"""OCB3 as specified in RFC 7253, on card primitives.

Key set-up (counted as init): ``L_* = E(0)``, ``L_$ = double(L_*)``,
``L_0 = double(L_$)`` and ``L_1..L_6`` (enough for the paper's 64-block
messages; more are derived on demand). Per message: one encryption for
``Ktop``, one per block (a final short block costs its ``Pad``), one for the
tag, so ``m + 2`` encryptions for ``m`` blocks -- the paper's Table I count.
The key set-up is computed per message: RFC 7253 computes L_*, L_$ and L_i
inside ENCRYPT, the pseudo code the paper implemented (§IV.A), and the paper
finds "OCB3's initial processing makes it slower than OCB2" (§IV.B). The
formatted nonce is one block copy into the Ktop buffer.

The ``Offset_0`` bit-shift by ``bottom`` (0..63) follows the paper's MULTOS
optimisation (§IV.A.2): the byte part is an index change inside a block copy,
the remaining 0..7 bits are one constant-count shift primitive, so a nonce
costs one copy plus one shift unless ``bottom`` is a multiple of 8. That
shift is over the 17-byte Stretch window by 1..7 places, so it is the
general shift routine (``variable=True``): on the native chips the paper
replaced BlockShiftLeft by the one-place 16-byte FixBlockShiftLeft only
inside two_times() (§V.B), and its later in-lining concerned the block
cipher functions; Offset_0 keeps BlockShiftLeft (Table V 'Original').
"""

from __future__ import annotations

from trustlab.apps.ae.common import BLOCK, SymmetricPassMode, blocks, double, ntz, pad10


class OCB3(SymmetricPassMode):
    name = "ocb3"
    nonce_sizes = tuple(range(1, 16))

    def _setup(self) -> None:
        c = self.crypto
        self.l_star = c.encrypt(self.kc, bytes(BLOCK))
        self.l_dollar = double(c, self.l_star)
        self.l = [double(c, self.l_dollar)]
        while len(self.l) < 7:
            self.l.append(double(c, self.l[-1]))

    def _l(self, i: int) -> bytes:
        while len(self.l) <= i:
            with self.crypto.phase("init"):
                self.l.append(double(self.crypto, self.l[-1]))
        return self.l[i]

    def _offset0(self, nonce: bytes) -> bytes:
        c = self.crypto
        self._check_nonce(nonce)
        taglen_bits = (self.tag_len * 8) % 128
        n = int.from_bytes(nonce, "big") | (1 << (8 * len(nonce)))  # the leading 1 bit
        block = ((taglen_bits << 121) | n).to_bytes(BLOCK, "big")
        bottom = block[-1] & 0x3F
        # the formatted nonce is written into a block buffer (a whole-block copy, as CCM's B_0)
        block = c.copy(block[:-1] + bytes([block[-1] & 0xC0]))
        ktop = c.encrypt(self.kc, block)
        stretch = ktop + c.xor(ktop[:8], ktop[1:9])
        byte_shift, bit_shift = divmod(bottom, 8)
        window = c.copy(stretch[byte_shift:byte_shift + BLOCK + 1])
        if bit_shift:
            window = c.shift_left(window, bit_shift, variable=True)
        return window[:BLOCK]

    def _hash(self, aad: bytes) -> bytes | None:
        if not aad:
            return None
        c = self.crypto
        total, offset = bytes(BLOCK), bytes(BLOCK)
        parts = blocks(aad)
        full = parts if len(parts[-1]) == BLOCK else parts[:-1]
        for i, a in enumerate(full, 1):
            offset = c.xor(offset, self._l(ntz(i)))
            total = c.xor(total, c.encrypt(self.kc, c.xor(a, offset)))
        if len(parts[-1]) < BLOCK:
            offset = c.xor(offset, self.l_star)
            total = c.xor(total, c.encrypt(self.kc, c.xor(pad10(parts[-1]), offset)))
        return total

    def _crypt(self, nonce: bytes, data: bytes, aad: bytes, encrypting: bool) -> tuple[bytes, bytes]:
        c = self.crypto
        offset = self._offset0(nonce)
        checksum = bytes(BLOCK)
        out = bytearray()
        parts = blocks(data)
        full = parts if parts and len(parts[-1]) == BLOCK else parts[:-1]
        for i, x in enumerate(full, 1):
            offset = c.xor(offset, self._l(ntz(i)))
            if encrypting:
                y = c.xor(offset, c.encrypt(self.kc, c.xor(x, offset)))
                checksum = c.xor(checksum, x)
            else:
                y = c.xor(offset, c.decrypt(self.kc, c.xor(x, offset)))
                checksum = c.xor(checksum, y)
            out += y
        if parts and len(parts[-1]) < BLOCK:
            last = parts[-1]
            offset = c.xor(offset, self.l_star)
            pad = c.encrypt(self.kc, offset)
            y = c.xor(last, pad)
            out += y
            checksum = c.xor(checksum, pad10(last if encrypting else y))
        tag = c.encrypt(self.kc, c.xor(c.xor(checksum, offset), self.l_dollar))
        h = self._hash(aad)
        if h is not None:
            tag = c.xor(tag, h)
        return bytes(out), tag[:self.tag_len]

