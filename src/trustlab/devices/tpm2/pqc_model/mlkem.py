"""ML-KEM (FIPS 203), written from the standard's algorithms, counting its work.

Not for production: it exists to count Keccak permutations, NTTs and
multiplications per operation (see :mod:`.tally`). Byte-equal to
pyca/cryptography (seeded key generation) and to NIST ACVP vectors; the tests
hold it to that. Algorithm numbers refer to FIPS 203 (August 2024).
"""

from __future__ import annotations

from trustlab.devices.tpm2.pqc_model.params import MLKEMParams
from trustlab.devices.tpm2.pqc_model.tally import Tally, XofStream, sha3_256, sha3_512, shake

Q = 3329
N = 256


def _bitrev7(i: int) -> int:
    return int(f"{i:07b}"[::-1], 2)


ZETAS = [pow(17, _bitrev7(i), Q) for i in range(128)]
GAMMAS = [pow(17, 2 * _bitrev7(i) + 1, Q) for i in range(128)]


# ---- encodings (Alg. 3-6) ------------------------------------------------

def byte_encode(f: list[int], d: int) -> bytes:
    acc, nbits, out = 0, 0, bytearray()
    for c in f:
        acc |= (c % (1 << d) if d < 12 else c % Q) << nbits
        nbits += d
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    return bytes(out)


def byte_decode(b: bytes, d: int) -> list[int]:
    v = int.from_bytes(b, "little")
    mask = (1 << d) - 1
    m = Q if d == 12 else 1 << d
    return [((v >> (d * i)) & mask) % m for i in range(N)]


def compress(f: list[int], d: int) -> list[int]:
    return [((x << (d + 1)) + Q) // (2 * Q) % (1 << d) for x in f]


def decompress(f: list[int], d: int) -> list[int]:
    return [(Q * y + (1 << (d - 1))) >> d for y in f]


# ---- sampling (Alg. 7, 8) -----------------------------------------------

def sample_ntt(t: Tally, seed: bytes) -> list[int]:
    xof = XofStream(t, "shake128", seed)
    a: list[int] = []
    while len(a) < N:
        c0, c1, c2 = xof.read(3)
        d1 = c0 + 256 * (c1 % 16)
        d2 = (c1 // 16) + 16 * c2
        if d1 < Q:
            a.append(d1)
        if d2 < Q and len(a) < N:
            a.append(d2)
    xof.close()
    t["sample_uniform"] += 1
    return a


def sample_cbd(t: Tally, b: bytes, eta: int) -> list[int]:
    bits = int.from_bytes(b, "little")
    f = []
    for i in range(N):
        x = sum((bits >> (2 * i * eta + j)) & 1 for j in range(eta))
        y = sum((bits >> (2 * i * eta + eta + j)) & 1 for j in range(eta))
        f.append((x - y) % Q)
    t["sample_cbd"] += 1
    return f


def prf(t: Tally, eta: int, s: bytes, b: int) -> bytes:
    return shake(t, "shake256", s + bytes([b]), 64 * eta)


# ---- NTT arithmetic (Alg. 9-12) -----------------------------------------

def ntt(t: Tally, f: list[int]) -> list[int]:
    f = list(f)
    i = 1
    length = 128
    while length >= 2:
        for start in range(0, N, 2 * length):
            zeta = ZETAS[i]
            i += 1
            for j in range(start, start + length):
                u = zeta * f[j + length] % Q
                f[j + length] = (f[j] - u) % Q
                f[j] = (f[j] + u) % Q
        length //= 2
    t["ntt"] += 1
    return f


def invntt(t: Tally, f: list[int]) -> list[int]:
    f = list(f)
    i = 127
    length = 2
    while length <= 128:
        for start in range(0, N, 2 * length):
            zeta = ZETAS[i]
            i -= 1
            for j in range(start, start + length):
                u = f[j]
                f[j] = (u + f[j + length]) % Q
                f[j + length] = zeta * (f[j + length] - u) % Q
        length *= 2
    t["invntt"] += 1
    return [x * 3303 % Q for x in f]


def multiply_ntts(t: Tally, f: list[int], g: list[int]) -> list[int]:
    h = [0] * N
    for i in range(128):
        a0, a1, b0, b1 = f[2 * i], f[2 * i + 1], g[2 * i], g[2 * i + 1]
        h[2 * i] = (a0 * b0 + a1 * b1 * GAMMAS[i]) % Q
        h[2 * i + 1] = (a0 * b1 + a1 * b0) % Q
    t["basemul"] += 1
    return h


def add(t: Tally, f: list[int], g: list[int]) -> list[int]:
    t["poly_add"] += 1
    return [(a + b) % Q for a, b in zip(f, g)]


def sub(t: Tally, f: list[int], g: list[int]) -> list[int]:
    t["poly_add"] += 1
    return [(a - b) % Q for a, b in zip(f, g)]


def _matrix(t: Tally, p: MLKEMParams, rho: bytes) -> list[list[list[int]]]:
    return [[sample_ntt(t, rho + bytes([j, i])) for j in range(p.k)] for i in range(p.k)]


def _dot(t: Tally, row: list[list[int]], vec: list[list[int]]) -> list[int]:
    acc = multiply_ntts(t, row[0], vec[0])
    for a, b in zip(row[1:], vec[1:]):
        acc = add(t, acc, multiply_ntts(t, a, b))
    return acc


# ---- K-PKE (Alg. 13-15) -------------------------------------------------

def _cbd_vector(t: Tally, k: int, eta: int, seed: bytes, first: int) -> list:
    """k polynomials SamplePolyCBD_eta(PRF_eta(seed, N)) for N = first, first+1, ... (Alg. 13/14 loops)."""
    return [sample_cbd(t, prf(t, eta, seed, first + i), eta) for i in range(k)]


def kpke_keygen(t: Tally, p: MLKEMParams, d: bytes) -> tuple[bytes, bytes]:
    g = sha3_512(t, d + bytes([p.k]))
    rho, sigma = g[:32], g[32:]
    a_hat = _matrix(t, p, rho)
    s = _cbd_vector(t, p.k, p.eta1, sigma, 0)
    e = _cbd_vector(t, p.k, p.eta1, sigma, p.k)
    s_hat = [ntt(t, x) for x in s]
    e_hat = [ntt(t, x) for x in e]
    t_hat = [add(t, _dot(t, a_hat[i], s_hat), e_hat[i]) for i in range(p.k)]
    ek = b"".join(byte_encode(x, 12) for x in t_hat) + rho
    dk = b"".join(byte_encode(x, 12) for x in s_hat)
    return ek, dk


def kpke_encrypt(t: Tally, p: MLKEMParams, ek: bytes, m: bytes, r: bytes) -> bytes:
    t_hat = [byte_decode(ek[384 * i:384 * (i + 1)], 12) for i in range(p.k)]
    rho = ek[384 * p.k:]
    a_hat = _matrix(t, p, rho)
    y = _cbd_vector(t, p.k, p.eta1, r, 0)
    e1 = _cbd_vector(t, p.k, p.eta2, r, p.k)
    e2 = sample_cbd(t, prf(t, p.eta2, r, 2 * p.k), p.eta2)
    y_hat = [ntt(t, x) for x in y]
    a_t = [[a_hat[j][i] for j in range(p.k)] for i in range(p.k)]
    u = [add(t, invntt(t, _dot(t, a_t[i], y_hat)), e1[i]) for i in range(p.k)]
    mu = decompress(byte_decode(m, 1), 1)
    v = add(t, add(t, invntt(t, _dot(t, t_hat, y_hat)), e2), mu)
    c1 = b"".join(byte_encode(compress(x, p.du), p.du) for x in u)
    c2 = byte_encode(compress(v, p.dv), p.dv)
    return c1 + c2


def kpke_decrypt(t: Tally, p: MLKEMParams, dk: bytes, c: bytes) -> bytes:
    n1 = 32 * p.du
    u = [decompress(byte_decode(c[n1 * i:n1 * (i + 1)], p.du), p.du) for i in range(p.k)]
    v = decompress(byte_decode(c[n1 * p.k:], p.dv), p.dv)
    s_hat = [byte_decode(dk[384 * i:384 * (i + 1)], 12) for i in range(p.k)]
    w = sub(t, v, invntt(t, _dot(t, s_hat, [ntt(t, x) for x in u])))
    return byte_encode(compress(w, 1), 1)


# ---- ML-KEM (Alg. 16-18, internal; seeds and m given) -------------------

def keygen(t: Tally, p: MLKEMParams, d: bytes, z: bytes) -> tuple[bytes, bytes]:
    """(ek, dk) from the 32-byte seeds d and z (cryptography's 64-byte seed is d || z)."""
    ek, dk_pke = kpke_keygen(t, p, d)
    return ek, dk_pke + ek + sha3_256(t, ek) + z


def encaps(t: Tally, p: MLKEMParams, ek: bytes, m: bytes) -> tuple[bytes, bytes]:
    """(shared key K, ciphertext c) for the 32-byte message m."""
    g = sha3_512(t, m + sha3_256(t, ek))
    key, r = g[:32], g[32:]
    return key, kpke_encrypt(t, p, ek, m, r)


def decaps(t: Tally, p: MLKEMParams, dk: bytes, c: bytes) -> bytes:
    """The shared key (the implicit-rejection key J(z || c) if c does not re-encrypt)."""
    k = p.k
    dk_pke, ek_pke = dk[:384 * k], dk[384 * k:768 * k + 32]
    h, z = dk[768 * k + 32:768 * k + 64], dk[768 * k + 64:]
    m2 = kpke_decrypt(t, p, dk_pke, c)
    g = sha3_512(t, m2 + h)
    key, r2 = g[:32], g[32:]
    k_bar = shake(t, "shake256", z + c, 32)
    c2 = kpke_encrypt(t, p, ek_pke, m2, r2)
    return key if c2 == c else k_bar
