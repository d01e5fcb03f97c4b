"""Op counts against an independent count: FIPS 203/204 closed forms, FIPS 204's expected repetitions.

The closed forms are read off the standards' algorithms (FIPS 203 Alg. 13-18,
FIPS 204 Alg. 6-8): how many NTTs, multiplications, samples and hash calls each
operation makes, and how many Keccak-f[1600] permutations each hash call takes
(ceil((in + 1) / rate) to absorb, one more per further block squeezed). The
rejection samplers' byte use is recounted here from hashlib output with the
standards' acceptance rules, independently of the implementation's samplers.
"""

import hashlib
import math
import random
import statistics

import pytest

from trustlab.devices.tpm2.pqc_model import calibration, counting, counts, mldsa, mlkem
from trustlab.devices.tpm2.pqc_model.params import MLDSA, MLKEM
from trustlab.devices.tpm2.pqc_model.tally import Tally

Q_KEM, Q_DSA = 3329, 8380417


def perms(in_len, out_len, rate):
    return math.ceil((in_len + 1) / rate) + max(0, math.ceil(out_len / rate) - 1)


def kem_uniform_perms(seed):
    out = hashlib.shake_128(seed).digest(168 * 12)
    got, pos = 0, 0
    while got < 256:
        c0, c1, c2 = out[pos:pos + 3]
        pos += 3
        for d in (c0 + 256 * (c1 % 16), c1 // 16 + 16 * c2):
            if d < Q_KEM and got < 256:
                got += 1
    return math.ceil(pos / 168)


def dsa_uniform_perms(seed):
    out = hashlib.shake_128(seed).digest(168 * 12)
    got, pos = 0, 0
    while got < 256:
        z = int.from_bytes(out[pos:pos + 3], "little") & 0x7FFFFF
        pos += 3
        got += z < Q_DSA
    return math.ceil(pos / 168)


def dsa_bounded_perms(seed, eta):
    out = hashlib.shake_256(seed).digest(136 * 8)
    ok = (lambda b: b < 15) if eta == 2 else (lambda b: b < 9)
    got, pos = 0, 0
    while got < 256:
        z = out[pos]
        pos += 1
        got += ok(z & 15)
        if got < 256:
            got += ok(z >> 4)
    return math.ceil((len(seed) + 1) / 136) + max(0, math.ceil(pos / 136) - 1)


def prf_perms(eta):
    return perms(33, 64 * eta, 136)


@pytest.mark.parametrize("name", sorted(MLKEM))
def test_mlkem_counts_match_fips203_closed_form(name):
    p, k = MLKEM[name], MLKEM[name].k
    rnd = random.Random(name)
    d, z, m = rnd.randbytes(32), rnd.randbytes(32), rnd.randbytes(32)
    rho = hashlib.sha3_512(d + bytes([k])).digest()[:32]
    matrix = sum(kem_uniform_perms(rho + bytes([j, i])) for i in range(k) for j in range(k))
    ek_hash = perms(384 * k + 32, 32, 136)

    t = Tally()
    ek, dk = mlkem.keygen(t, p, d, z)
    assert t["keccak_f1600"] == 1 + matrix + 2 * k * prf_perms(p.eta1) + ek_hash
    assert (t["ntt"], t["invntt"], t["basemul"], t["poly_add"]) == (2 * k, 0, k * k, k * k)
    assert (t["sample_uniform"], t["sample_cbd"]) == (k * k, 2 * k)

    encrypt = matrix + k * prf_perms(p.eta1) + (k + 1) * prf_perms(p.eta2)
    t = Tally()
    _, c = mlkem.encaps(t, p, ek, m)
    assert t["keccak_f1600"] == ek_hash + 1 + encrypt
    assert (t["ntt"], t["invntt"], t["basemul"], t["poly_add"]) == (k, k + 1, k * k + k, k * k + k + 1)
    assert (t["sample_uniform"], t["sample_cbd"]) == (k * k, 2 * k + 1)

    t = Tally()
    mlkem.decaps(t, p, dk, c)
    assert t["keccak_f1600"] == 1 + perms(32 + len(c), 32, 136) + encrypt
    assert (t["ntt"], t["invntt"], t["basemul"]) == (k + k, 1 + k + 1, k + k * k + k)


@pytest.mark.parametrize("name", sorted(MLDSA))
def test_mldsa_keygen_verify_counts_match_fips204_closed_form(name):
    p, k, l = MLDSA[name], MLDSA[name].k, MLDSA[name].l
    rnd = random.Random(name)
    xi = rnd.randbytes(32)
    seeds = hashlib.shake_256(xi + bytes([k, l])).digest(128)
    rho, rho2 = seeds[:32], seeds[32:96]
    matrix = sum(dsa_uniform_perms(rho + bytes([s, r])) for r in range(k) for s in range(l))
    secrets = sum(dsa_bounded_perms(rho2 + r.to_bytes(2, "little"), p.eta) for r in range(k + l))
    tr = perms(p.pk_bytes, 64, 136)

    t = Tally()
    pk, sk = mldsa.keygen(t, p, xi)
    assert t["keccak_f1600"] == 1 + matrix + secrets + tr
    assert (t["ntt"], t["invntt"], t["basemul"], t["poly_add"]) == (l, k, k * l, k * l)
    assert (t["sample_uniform"], t["sample_bounded"]) == (k * l, k + l)

    msg = rnd.randbytes(32)
    sig = mldsa.sign(Tally(), p, sk, msg, rnd.randbytes(32))
    w1_bits = ((Q_DSA - 1) // (2 * p.gamma2) - 1).bit_length()
    t = Tally()
    assert mldsa.verify(t, p, pk, msg, sig)
    ball = t["keccak_f1600"] - (matrix + tr + perms(64 + 2 + 32, 64, 136) + perms(64 + k * 32 * w1_bits, p.lam // 4, 136))
    assert ball in (1, 2)  # SampleInBall: 8 + tau + rejected bytes, almost always within one block
    assert (t["ntt"], t["invntt"], t["basemul"], t["poly_add"]) == (l + 1 + k, k, k * l + k, k * l)


@pytest.mark.parametrize("name", sorted(MLDSA))
def test_mldsa_sign_counts_follow_the_loop_structure(name):
    """Per iteration (FIPS 204 Alg. 7): l NTTs of y, 1 of c; k + l + k inverse NTTs; ct0's k more
    only when the first two bounds pass (R1 of the R iterations)."""
    p, k, l = MLDSA[name], MLDSA[name].k, MLDSA[name].l
    c_bits = 1 + (p.gamma1 - 1).bit_length()
    for seed in range(3):
        t = counting.run(name, "sign", seed)
        r = t["rej_iterations"]
        assert t["ntt"] == l + 2 * k + r * (l + 1)
        r1, rest = divmod(t["invntt"] - r * (2 * k + l), k)
        assert rest == 0 and 1 <= r1 <= r
        assert t["basemul"] == r * (k * l + l + k) + r1 * k
        assert t["poly_add"] == r * (k * (l - 1) + l + k)
        assert t["sample_mask"] == r * l
        per_iteration = l * perms(66, 32 * c_bits, 136)
        assert t["keccak_f1600"] > r * per_iteration


# FIPS 204 Table 1, "expected number of repetitions" (reference values only).
FIPS204_EXPECTED_REPETITIONS = {"ML-DSA-44": 4.25, "ML-DSA-65": 5.1, "ML-DSA-87": 3.85}


@pytest.mark.parametrize("name", sorted(FIPS204_EXPECTED_REPETITIONS))
def test_signing_loop_distribution_matches_fips204_expectation(name):
    reps = [r["rej_iterations"] for r in counts.runs(name, "sign")]
    assert len(reps) >= 1000
    expected = FIPS204_EXPECTED_REPETITIONS[name]
    se = statistics.stdev(reps) / math.sqrt(len(reps))
    assert abs(statistics.mean(reps) - expected) < 3 * se
    # geometric: P(R = 1) = 1 / E[R]
    assert abs(reps.count(1) / len(reps) - 1 / expected) < 0.05


def test_shipped_counts_are_reproducible():
    for name, op in (("ML-KEM-768", "decapsulate"), ("ML-DSA-44", "verify"), ("ML-DSA-44", "sign")):
        assert dict(counting.run(name, op, 0)) == {u: c for u, c in counts.runs(name, op)[0].items() if c}


def test_pqm4_calibration_is_consistent():
    cal = calibration.calibrate()
    # one Keccak-f[1600] cost fits every pqm4 row: our permutation counts agree with pqm4's hashing share
    for row, cycles in cal.keccak_rows.items():
        assert abs(cycles / cal.keccak_cycles - 1) < 0.15, row
    for row, err in cal.residuals.items():
        assert abs(err) < 0.15, row
