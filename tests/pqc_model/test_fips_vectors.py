"""The counting FIPS 203/204 implementations are byte-exact: NIST ACVP vectors and pyca/cryptography.

Vectors: tests/pqc_model/vectors/*.json, a handful of NIST ACVP-Server
gen-val test cases (each file names its origin and the copy it came from).
cryptography signs hedged and encapsulates with its own randomness, so for
those operations the check is cross-verification both ways.
"""

import json
import random
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa as c_mldsa
from cryptography.hazmat.primitives.asymmetric import mlkem as c_mlkem

from trustlab.devices.tpm2.pqc_model import mldsa, mlkem
from trustlab.devices.tpm2.pqc_model.params import params
from trustlab.devices.tpm2.pqc_model.tally import Tally

VECTORS = Path(__file__).parent / "vectors"
DSA = {"ML-DSA-44": c_mldsa.MLDSA44PrivateKey, "ML-DSA-65": c_mldsa.MLDSA65PrivateKey,
       "ML-DSA-87": c_mldsa.MLDSA87PrivateKey}
KEM = {"ML-KEM-768": c_mlkem.MLKEM768PrivateKey, "ML-KEM-1024": c_mlkem.MLKEM1024PrivateKey}


def _cases(name):
    doc = json.loads((VECTORS / name).read_text())
    assert "ACVP-Server" in doc["source"]["origin"]
    return doc["tests"]


def _hex(s):
    return bytes.fromhex(s)


@pytest.mark.parametrize("case", _cases("mlkem_keygen.json"), ids=lambda c: c["parameterSet"])
def test_mlkem_keygen_acvp(case):
    ek, dk = mlkem.keygen(Tally(), params(case["parameterSet"]), _hex(case["d"]), _hex(case["z"]))
    assert (ek, dk) == (_hex(case["ek"]), _hex(case["dk"]))


@pytest.mark.parametrize("case", _cases("mlkem_encapdecap.json"),
                         ids=lambda c: f"{c['parameterSet']}-{c['function']}-{c.get('reason', '')}")
def test_mlkem_encaps_decaps_acvp(case):
    p = params(case["parameterSet"])
    if case["function"] == "encapsulation":
        assert mlkem.encaps(Tally(), p, _hex(case["ek"]), _hex(case["m"])) == (_hex(case["k"]), _hex(case["c"]))
    else:  # includes a modified ciphertext: implicit rejection key
        assert mlkem.decaps(Tally(), p, _hex(case["dk"]), _hex(case["c"])) == _hex(case["k"])


@pytest.mark.parametrize("case", _cases("mldsa_keygen.json"), ids=lambda c: c["parameterSet"])
def test_mldsa_keygen_acvp(case):
    pk, sk = mldsa.keygen(Tally(), params(case["parameterSet"]), _hex(case["seed"]))
    assert (pk, sk) == (_hex(case["pk"]), _hex(case["sk"]))


@pytest.mark.parametrize("case", _cases("mldsa_siggen.json"),
                         ids=lambda c: f"{c['parameterSet']}-{'det' if c['deterministic'] else 'hedged'}")
def test_mldsa_sign_internal_acvp(case):
    p = params(case["parameterSet"])
    t = Tally()
    sig = mldsa.sign_internal(t, p, _hex(case["sk"]), _hex(case["message"]), _hex(case["rnd"]))
    assert sig == _hex(case["signature"])
    assert t["rej_iterations"] >= 1


@pytest.mark.parametrize("name", sorted(KEM))
def test_mlkem_matches_cryptography(name):
    p, rnd = params(name), random.Random(name)
    seed = rnd.randbytes(64)
    ek, dk = mlkem.keygen(Tally(), p, seed[:32], seed[32:])
    theirs = KEM[name].from_seed_bytes(seed)
    assert ek == theirs.public_key().public_bytes_raw()
    key, c = mlkem.encaps(Tally(), p, ek, rnd.randbytes(32))
    assert theirs.decapsulate(c) == key  # they decapsulate ours
    their_key, their_c = theirs.public_key().encapsulate()
    assert mlkem.decaps(Tally(), p, dk, their_c) == their_key  # we decapsulate theirs
    tampered = bytes([their_c[0] ^ 1]) + their_c[1:]
    assert mlkem.decaps(Tally(), p, dk, tampered) == theirs.decapsulate(tampered)  # same implicit rejection


@pytest.mark.parametrize("name", sorted(DSA))
def test_mldsa_matches_cryptography(name):
    p, rnd = params(name), random.Random(name)
    seed = rnd.randbytes(32)
    pk, sk = mldsa.keygen(Tally(), p, seed)
    theirs = DSA[name].from_seed_bytes(seed)
    assert pk == theirs.public_key().public_bytes_raw()
    msg, ctx = b"attestation digest", b"tpm"
    ours = mldsa.sign(Tally(), p, sk, msg, rnd.randbytes(32), ctx)
    theirs.public_key().verify(ours, msg, ctx)  # raises if invalid
    their_sig = theirs.sign(msg, ctx)
    assert mldsa.verify(Tally(), p, pk, msg, their_sig, ctx)
    assert not mldsa.verify(Tally(), p, pk, msg + b"!", their_sig, ctx)
    assert not mldsa.verify(Tally(), p, pk, msg, their_sig, b"other")
    bad = bytearray(their_sig)
    bad[-1] ^= 0xFF  # hint encoding broken
    assert not mldsa.verify(Tally(), p, pk, msg, bytes(bad), ctx)
