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
