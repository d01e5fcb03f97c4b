"""PersistentState's hand-written static JSON is byte-identical to json.dumps(sort_keys=True) of the same fields."""

from __future__ import annotations

import json
import random

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.devices.tpm12.state import PersistentState, _der


def test_static_part_equals_json_dumps():
    keys = [None, rsa.generate_private_key(public_exponent=65537, key_size=1024)]
    rng = random.Random(7)
    secret = lambda: rng.choice([None, b"", rng.randbytes(20), rng.randbytes(rng.randint(1, 30))])  # noqa: E731
    for _ in range(200):
        st = PersistentState(ek=rng.choice(keys), owner_auth=secret(), tpm_proof=secret(), srk=rng.choice(keys),
                             srk_auth=rng.choice([b"", rng.randbytes(20)]))
        static = json.dumps({"ek": _der(st.ek) if st.ek else None,
                             "owner_auth": st.owner_auth.hex() if st.owner_auth else None,
                             "tpm_proof": st.tpm_proof.hex() if st.tpm_proof else None,
                             "srk": _der(st.srk) if st.srk else None, "srk_auth": st.srk_auth.hex()}, sort_keys=True)
        doc = st.to_bytes()
        assert f'"static": {static}, "dynamic"'.encode() in doc
        assert PersistentState.from_bytes(doc, "test").to_bytes() == doc
