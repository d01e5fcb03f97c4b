"""The host's crypto goes through one seam (devices/tpm12/hostcrypto) that benchmarks can record.

bench_speed.oracle counts the host's half of the protocol in its raw-crypto
baseline by replacing these functions; a host path that called hashlib or
OpenSSL directly would silently drop out of that baseline.
"""

from __future__ import annotations

from collections import Counter

import pytest

from trustlab.apps import oracle
from trustlab.devices.tpm12 import hostcrypto
from trustlab.timing import registry


def test_the_oracle_hosts_crypto_all_passes_through_the_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = registry.load("infineon-2010")
    plain = oracle.run(profile, 3, queries=1)
    seen: Counter[str] = Counter()
    for name in ("sha1", "hmac_sha1", "oaep_encrypt", "verify_sha1"):
        real = getattr(hostcrypto, name)
        monkeypatch.setattr(hostcrypto, name, lambda *a, _n=name, _f=real: (seen.update([_n]), _f(*a))[1])
    recorded = oracle.run(profile, 3, queries=1)
    assert recorded.calls == plain.calls  # same commands, same modelled times (the HMAC key is fresh per run)
    assert seen["oaep_encrypt"] == 2 * 3  # TakeOwnership: owner and SRK secrets to each EK
    assert seen["verify_sha1"] == 2  # each destination checks the AIK's certificate
    authorized = sum(1 for calls in recorded.calls.values() for cmd, _ in calls
                     if cmd not in ("TPM_OIAP", "TPM_OSAP"))
    assert seen["hmac_sha1"] >= authorized  # a request and a response HMAC per session
    assert seen["sha1"] >= authorized


def test_host_nonces_are_never_handed_out_twice_across_threads() -> None:
    import threading

    drawn: list[bytes] = []

    def draw() -> None:
        drawn.extend([hostcrypto.nonce() for _ in range(3000)])  # > 4 KiB each: buffers refill

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(drawn)) == len(drawn) == 12000


# RFC 2202 section 3 (HMAC-SHA1): tests 1, 2, 3 and 6 (a key longer than a block, hashed first)
_RFC2202 = [
    (b"\x0b" * 20, b"Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"),
    (b"Jefe", b"what do ya want for nothing?", "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
    (b"\xaa" * 20, b"\xdd" * 50, "125d7342b9ac11cd91a39af48aa17b4f63f175d3"),
    (b"\xaa" * 80, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "aa4ae5e15272d00e95705637ce8a3b55ed402112"),
]


@pytest.mark.parametrize("key, msg, expected", _RFC2202)
def test_engine_and_host_hmac_sha1_give_rfc_2202_vectors(key: bytes, msg: bytes, expected: str) -> None:
    from trustlab.devices.tpm12.primitives import Primitives
    from trustlab.timing.clock import Clock

    engine = Primitives(Clock(registry.load("infineon-2010")), keygen=lambda bits: None)
    assert engine.hmac(key, msg[:5], msg[5:]).hex() == expected
    assert hostcrypto.hmac_sha1(key, msg[:3], msg[3:]).hex() == expected


def test_hmac_sha1_equals_the_stdlib_one_shot_for_every_key_length() -> None:
    import hmac
    import os

    for n in (0, 1, 20, 63, 64, 65, 200):
        key, msg = os.urandom(n), os.urandom(61)
        assert hostcrypto.hmac_sha1(key, msg) == hmac.digest(key, msg, "sha1")


def test_without_openssls_hmac_the_fallback_gives_the_rfc_2202_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python built without OpenSSL has no ``_hashlib``: the engine and the host then use the stdlib's
    ``hmac.new`` (itself on its pure-Python path there), and must still give RFC 2202's answers."""
    import hmac
    import sys

    from trustlab.devices.tpm12 import primitives
    from trustlab.devices.tpm12.primitives import Primitives
    from trustlab.timing.clock import Clock

    monkeypatch.setitem(sys.modules, "_hashlib", None)  # `from _hashlib import ...` raises ImportError
    fallback = primitives._hmac_constructor()
    assert fallback is hmac.new
    monkeypatch.setattr(hmac, "_hashopenssl", None)  # hmac.new's own OpenSSL shortcut gone too
    monkeypatch.setattr(primitives, "new_hmac", fallback)
    monkeypatch.setattr(hostcrypto, "new_hmac", fallback)
    engine = Primitives(Clock(registry.load("infineon-2010")), keygen=lambda bits: None)
    for key, msg, expected in _RFC2202:
        assert engine.hmac(key, msg[:5], msg[5:]).hex() == expected
        assert hostcrypto.hmac_sha1(key, msg[:3], msg[3:]).hex() == expected
