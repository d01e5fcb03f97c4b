"""ML-DSA (FIPS 204), written from the standard's algorithms, counting its work.

Not for production: it exists to count Keccak permutations, NTTs,
multiplications and the iterations of the signing loop (a random variable:
FIPS 204 Table 1 gives its expected value) per operation (see :mod:`.tally`).
Byte-equal to pyca/cryptography (seeded key generation), signatures cross-verify
with it both ways, and it reproduces NIST ACVP vectors; the tests hold it to
that. Algorithm numbers refer to FIPS 204 (August 2024).
"""

from __future__ import annotations

from trustlab.devices.tpm2.pqc_model.params import MLDSAParams
from trustlab.devices.tpm2.pqc_model.tally import Tally, XofStream, shake

Q = 8380417
N = 256
D = 13


def _bitrev8(i: int) -> int:
    return int(f"{i:08b}"[::-1], 2)


ZETAS = [pow(1753, _bitrev8(i), Q) for i in range(256)]
N_INV = 8347681  # 256^-1 mod q


def h(t: Tally, data: bytes, n: int) -> bytes:
    return shake(t, "shake256", data, n)


# ---- bit packing (Alg. 16-21) -------------------------------------------

def _pack(values: list[int], bits: int) -> bytes:
    acc = 0
    for i, v in enumerate(values):
        acc |= v << (bits * i)
    return acc.to_bytes(bits * len(values) // 8, "little")


def _unpack(b: bytes, bits: int, n: int = N) -> list[int]:
    v = int.from_bytes(b, "little")
    mask = (1 << bits) - 1
    return [(v >> (bits * i)) & mask for i in range(n)]


def simple_bit_pack(w: list[int], b: int) -> bytes:
    return _pack(w, b.bit_length())


def bit_pack(w: list[int], a: int, b: int) -> bytes:
    """Coefficients in [-a, b] (given mod q or centred) packed as b - w."""
    return _pack([(b - _centred(x)) for x in w], (a + b).bit_length())


def bit_unpack(v: bytes, a: int, b: int) -> list[int]:
    return [b - z for z in _unpack(v, (a + b).bit_length())]


def _centred(x: int) -> int:
    x %= Q
    return x - Q if x > Q // 2 else x


def hint_bit_pack(p: MLDSAParams, hints: list[list[int]]) -> bytes:
    y = bytearray(p.omega + p.k)
    index = 0
    for i in range(p.k):
        for j in range(N):
            if hints[i][j]:
                y[index] = j
                index += 1
        y[p.omega + i] = index
    return bytes(y)


def hint_bit_unpack(p: MLDSAParams, y: bytes) -> list[list[int]] | None:
    hints = [[0] * N for _ in range(p.k)]
    index = 0
    for i in range(p.k):
        if y[p.omega + i] < index or y[p.omega + i] > p.omega:
            return None
        first = index
        while index < y[p.omega + i]:
            if index > first and y[index - 1] >= y[index]:
                return None
            hints[i][y[index]] = 1
            index += 1
    if any(y[i] for i in range(index, p.omega)):
        return None
    return hints


def _eta_bits(p: MLDSAParams) -> int:
    return (2 * p.eta).bit_length()


def pk_encode(rho: bytes, t1: list[list[int]]) -> bytes:
    return rho + b"".join(_pack(x, 10) for x in t1)


def pk_decode(p: MLDSAParams, pk: bytes) -> tuple[bytes, list[list[int]]]:
    return pk[:32], [_unpack(pk[32 + 320 * i:32 + 320 * (i + 1)], 10) for i in range(p.k)]


def sk_encode(p: MLDSAParams, rho, key, tr, s1, s2, t0) -> bytes:
    half = 1 << (D - 1)
    return (rho + key + tr + b"".join(bit_pack(x, p.eta, p.eta) for x in s1 + s2)
            + b"".join(bit_pack(x, half - 1, half) for x in t0))


def sk_decode(p: MLDSAParams, sk: bytes):
    rho, key, tr = sk[:32], sk[32:64], sk[64:128]
    eb = 32 * _eta_bits(p)
    off = 128
    s = []
    for _ in range(p.l + p.k):
        s.append([x % Q for x in bit_unpack(sk[off:off + eb], p.eta, p.eta)])
        off += eb
    half = 1 << (D - 1)
    t0 = []
    for _ in range(p.k):
        t0.append([x % Q for x in bit_unpack(sk[off:off + 32 * D], half - 1, half)])
        off += 32 * D
    return rho, key, tr, s[:p.l], s[p.l:], t0


def _z_bits(p: MLDSAParams) -> int:
    return 1 + (p.gamma1 - 1).bit_length()


def sig_encode(p: MLDSAParams, c_tilde: bytes, z, hints) -> bytes:
    return c_tilde + b"".join(bit_pack(x, p.gamma1 - 1, p.gamma1) for x in z) + hint_bit_pack(p, hints)


def sig_decode(p: MLDSAParams, sig: bytes):
    lc = p.lam // 4
    zb = 32 * _z_bits(p)
    c_tilde = sig[:lc]
    z = [[x % Q for x in bit_unpack(sig[lc + zb * i:lc + zb * (i + 1)], p.gamma1 - 1, p.gamma1)]
         for i in range(p.l)]
    return c_tilde, z, hint_bit_unpack(p, sig[lc + zb * p.l:])


def w1_encode(p: MLDSAParams, w1) -> bytes:
    return b"".join(simple_bit_pack(x, (Q - 1) // (2 * p.gamma2) - 1) for x in w1)


# ---- sampling (Alg. 29-34) ----------------------------------------------

def sample_in_ball(t: Tally, p: MLDSAParams, rho: bytes) -> list[int]:
    xof = XofStream(t, "shake256", rho)
    signs = int.from_bytes(xof.read(8), "little")
    c = [0] * N
    for i in range(N - p.tau, N):
        j = xof.read(1)[0]
        while j > i:
            j = xof.read(1)[0]
        c[i] = c[j]
        c[j] = Q - 1 if (signs >> (i + p.tau - N)) & 1 else 1
    xof.close()
    t["sample_ball"] += 1
    return c


def rej_ntt_poly(t: Tally, seed: bytes) -> list[int]:
    xof = XofStream(t, "shake128", seed)
    a: list[int] = []
    while len(a) < N:
        b0, b1, b2 = xof.read(3)
        z = ((b2 & 0x7F) << 16) | (b1 << 8) | b0
        if z < Q:
            a.append(z)
    xof.close()
    t["sample_uniform"] += 1
    return a


def _coeff_from_half_byte(p: MLDSAParams, b: int) -> int | None:
    if p.eta == 2 and b < 15:
        return 2 - (b % 5)
    if p.eta == 4 and b < 9:
        return 4 - b
    return None


def rej_bounded_poly(t: Tally, p: MLDSAParams, seed: bytes) -> list[int]:
    xof = XofStream(t, "shake256", seed)
    a: list[int] = []
    while len(a) < N:
        z = xof.read(1)[0]
        z0 = _coeff_from_half_byte(p, z & 15)
        z1 = _coeff_from_half_byte(p, z >> 4)
        if z0 is not None:
            a.append(z0 % Q)
        if z1 is not None and len(a) < N:
            a.append(z1 % Q)
    xof.close()
    t["sample_bounded"] += 1
    return a


def expand_a(t: Tally, p: MLDSAParams, rho: bytes):
    return [[rej_ntt_poly(t, rho + bytes([s, r])) for s in range(p.l)] for r in range(p.k)]


def expand_s(t: Tally, p: MLDSAParams, rho: bytes):
    s1 = [rej_bounded_poly(t, p, rho + r.to_bytes(2, "little")) for r in range(p.l)]
    s2 = [rej_bounded_poly(t, p, rho + (r + p.l).to_bytes(2, "little")) for r in range(p.k)]
    return s1, s2


def expand_mask(t: Tally, p: MLDSAParams, rho: bytes, mu: int):
    c = _z_bits(p)
    out = []
    for r in range(p.l):
        v = h(t, rho + (mu + r).to_bytes(2, "little"), 32 * c)
        out.append([x % Q for x in bit_unpack(v, p.gamma1 - 1, p.gamma1)])
        t["sample_mask"] += 1
    return out


# ---- rounding (Alg. 35-40) ----------------------------------------------

def _mod_pm(r: int, alpha: int) -> int:
    r0 = r % alpha
    return r0 - alpha if r0 > alpha // 2 else r0


def power2round(r: int) -> tuple[int, int]:
    r0 = _mod_pm(r % Q, 1 << D)
    return ((r % Q) - r0) >> D, r0


def decompose(p: MLDSAParams, r: int) -> tuple[int, int]:
    rp = r % Q
    r0 = _mod_pm(rp, 2 * p.gamma2)
    if rp - r0 == Q - 1:
        return 0, r0 - 1
    return (rp - r0) // (2 * p.gamma2), r0


def use_hint(p: MLDSAParams, hint: int, r: int) -> int:
    m = (Q - 1) // (2 * p.gamma2)
    r1, r0 = decompose(p, r)
    if hint and r0 > 0:
        return (r1 + 1) % m
    if hint:
        return (r1 - 1) % m
    return r1


# ---- NTT arithmetic (Alg. 41-45) ----------------------------------------

def ntt(t: Tally, w: list[int]) -> list[int]:
    w = list(w)
    m = 0
    length = 128
    while length >= 1:
        for start in range(0, N, 2 * length):
            m += 1
            z = ZETAS[m]
            for j in range(start, start + length):
                u = z * w[j + length] % Q
                w[j + length] = (w[j] - u) % Q
                w[j] = (w[j] + u) % Q
        length //= 2
    t["ntt"] += 1
    return w


def invntt(t: Tally, w: list[int]) -> list[int]:
    w = list(w)
    m = 256
    length = 1
    while length < N:
        for start in range(0, N, 2 * length):
            m -= 1
            z = Q - ZETAS[m]
            for j in range(start, start + length):
                u = w[j]
                w[j] = (u + w[j + length]) % Q
                w[j + length] = z * (u - w[j + length]) % Q
        length *= 2
    t["invntt"] += 1
    return [x * N_INV % Q for x in w]


def pointwise(t: Tally, a: list[int], b: list[int]) -> list[int]:
    t["basemul"] += 1
    return [x * y % Q for x, y in zip(a, b)]


def add(t: Tally, a: list[int], b: list[int]) -> list[int]:
    t["poly_add"] += 1
    return [(x + y) % Q for x, y in zip(a, b)]


def sub(t: Tally, a: list[int], b: list[int]) -> list[int]:
    t["poly_add"] += 1
    return [(x - y) % Q for x, y in zip(a, b)]


def _mat_vec(t: Tally, a_hat, v_hat):
    out = []
    for row in a_hat:
        acc = pointwise(t, row[0], v_hat[0])
        for a, b in zip(row[1:], v_hat[1:]):
            acc = add(t, acc, pointwise(t, a, b))
        out.append(acc)
    return out


def _inf_norm(vec) -> int:
    return max(abs(_centred(x)) for poly in vec for x in poly)


# ---- ML-DSA internal (Alg. 6-8) -----------------------------------------

def keygen(t: Tally, p: MLDSAParams, xi: bytes) -> tuple[bytes, bytes]:
    """(pk, sk) from the 32-byte seed xi (cryptography's ``from_seed_bytes`` seed)."""
    seeds = h(t, xi + bytes([p.k, p.l]), 128)
    rho, rho2, key = seeds[:32], seeds[32:96], seeds[96:]
    a_hat = expand_a(t, p, rho)
    s1, s2 = expand_s(t, p, rho2)
    s1_hat = [ntt(t, x) for x in s1]
    tt = [add(t, invntt(t, x), y) for x, y in zip(_mat_vec(t, a_hat, s1_hat), s2)]
    t1, t0 = [], []
    for poly in tt:
        pairs = [power2round(x) for x in poly]
        t1.append([a for a, _ in pairs])
        t0.append([b % Q for _, b in pairs])
    pk = pk_encode(rho, t1)
    tr = h(t, pk, 64)
    return pk, sk_encode(p, rho, key, tr, s1, s2, t0)


def message_representative(message: bytes, context: bytes = b"") -> bytes:
    """M' of pure ML-DSA (Alg. 2 line 10): 0 || |ctx| || ctx || M."""
    if len(context) > 255:
        raise ValueError("ML-DSA context is at most 255 bytes")
    return bytes([0, len(context)]) + context + message


def sign_internal(t: Tally, p: MLDSAParams, sk: bytes, m_prime: bytes, rnd: bytes) -> bytes:
    """Alg. 7; ``rnd`` = 32 zero bytes is the deterministic variant. Counts ``rej_iterations``."""
    rho, key, tr, s1, s2, t0 = sk_decode(p, sk)
    s1_hat = [ntt(t, x) for x in s1]
    s2_hat = [ntt(t, x) for x in s2]
    t0_hat = [ntt(t, x) for x in t0]
    a_hat = expand_a(t, p, rho)
    mu = h(t, tr + m_prime, 64)
    rho2 = h(t, key + rnd + mu, 64)
    kappa = 0
    while True:
        t["rej_iterations"] += 1
        y = expand_mask(t, p, rho2, kappa)
        kappa += p.l
        w = [invntt(t, x) for x in _mat_vec(t, a_hat, [ntt(t, x) for x in y])]
        w1 = [[decompose(p, x)[0] for x in poly] for poly in w]
        c_tilde = h(t, mu + w1_encode(p, w1), p.lam // 4)
        c_hat = ntt(t, sample_in_ball(t, p, c_tilde))
        cs1 = [invntt(t, pointwise(t, c_hat, x)) for x in s1_hat]
        cs2 = [invntt(t, pointwise(t, c_hat, x)) for x in s2_hat]
        z = [add(t, a, b) for a, b in zip(y, cs1)]
        w_cs2 = [sub(t, a, b) for a, b in zip(w, cs2)]
        r0_norm = max(abs(decompose(p, x)[1]) for poly in w_cs2 for x in poly)
        if _inf_norm(z) >= p.gamma1 - p.beta or r0_norm >= p.gamma2 - p.beta:
            continue
        ct0 = [invntt(t, pointwise(t, c_hat, x)) for x in t0_hat]
        # MakeHint(-ct0, w - cs2 + ct0): HighBits(w - cs2 + ct0) != HighBits(w - cs2)
        hints = [[int(decompose(p, (w_ + c_) % Q)[0] != decompose(p, w_)[0]) for c_, w_ in zip(a, b)]
                 for a, b in zip(ct0, w_cs2)]
        if _inf_norm(ct0) >= p.gamma2 or sum(map(sum, hints)) > p.omega:
            continue
        return sig_encode(p, c_tilde, z, hints)


def verify_internal(t: Tally, p: MLDSAParams, pk: bytes, m_prime: bytes, sig: bytes) -> bool:
    """Alg. 8."""
    if len(sig) != p.sig_bytes or len(pk) != p.pk_bytes:
        return False
    rho, t1 = pk_decode(p, pk)
    c_tilde, z, hints = sig_decode(p, sig)
    if hints is None:
        return False
    a_hat = expand_a(t, p, rho)
    tr = h(t, pk, 64)
    mu = h(t, tr + m_prime, 64)
    c_hat = ntt(t, sample_in_ball(t, p, c_tilde))
    az = _mat_vec(t, a_hat, [ntt(t, x) for x in z])
    ct1 = [pointwise(t, c_hat, ntt(t, [(x << D) % Q for x in poly])) for poly in t1]
    w_approx = [invntt(t, sub(t, a, b)) for a, b in zip(az, ct1)]
    w1 = [[use_hint(p, hh, x) for hh, x in zip(hp, wp)] for hp, wp in zip(hints, w_approx)]
    c_tilde2 = h(t, mu + w1_encode(p, w1), p.lam // 4)
    return _inf_norm(z) < p.gamma1 - p.beta and c_tilde == c_tilde2


def sign(t: Tally, p: MLDSAParams, sk: bytes, message: bytes, rnd: bytes, context: bytes = b"") -> bytes:
    """Pure ML-DSA.Sign (Alg. 2) with the 32-byte randomness ``rnd`` given."""
    return sign_internal(t, p, sk, message_representative(message, context), rnd)


def verify(t: Tally, p: MLDSAParams, pk: bytes, message: bytes, sig: bytes, context: bytes = b"") -> bool:
    """Pure ML-DSA.Verify (Alg. 3)."""
    return verify_internal(t, p, pk, message_representative(message, context), sig)
