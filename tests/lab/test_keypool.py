"""The cached host key pool (issue 15): faster host work, identical modelled figures."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.apps import keypool, oracle
from trustlab.timing import registry
from trustlab.timing.profile import Component


def _fresh(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def _figures(run: oracle.OracleRun) -> tuple:
    return run.calls, run.query_ms, run.setup_calls


@pytest.mark.parametrize("spread", [True, False])
def test_oracle_figures_are_the_same_with_pooled_and_fresh_keys(spread: bool) -> None:
    """Keys come from the pool or from OpenSSL afresh: every modelled ms is identical (seeded draws)."""
    profile = registry.load("infineon-2010")
    comps = dict(profile.components)  # a profile that charges key generation: still charged exactly
    comps["rsa_keygen"] = Component("rsa_keygen", 1234.5, sd=100.0 if spread else 0.0)
    profile = replace(profile, components=comps)
    pooled = oracle.run(profile, 3, queries=2, seed=5)
    fresh = oracle.run(profile, 3, queries=2, seed=5, keygen=_fresh)
    assert _figures(pooled) == _figures(fresh)
    assert any(cmd == "TPM_CMK_CreateKey" for cmd, _ in pooled.calls["source"])


def test_cursor_hands_out_distinct_keys_and_the_same_ones_each_run(tmp_path) -> None:
    cache = keypool.KeyCache(tmp_path / "keys.pem")
    first = cache.cursor()
    keys = [first() for _ in range(3)]
    assert len({k.public_key().public_numbers().n for k in keys}) == 3
    again = keypool.KeyCache(tmp_path / "keys.pem").cursor()  # another process: read from the file
    assert [again().private_numbers() for _ in range(3)] == [k.private_numbers() for k in keys]
    first.reset()
    assert first() is keys[0]
    assert first(1024).key_size == 1024  # other sizes: fresh, not cached


def test_torn_key_file_keeps_the_good_prefix(tmp_path) -> None:
    path = tmp_path / "keys.pem"
    cursor = keypool.KeyCache(path).cursor()
    k0, _k1 = cursor(), cursor()
    path.write_bytes(path.read_bytes()[:-200])  # the second key cut short
    again = keypool.KeyCache(path).cursor()
    assert again().private_numbers() == k0.private_numbers()
    assert again().key_size == 2048


def test_unwritable_cache_still_gives_keys(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cursor = keypool.KeyCache(blocker / "keys.pem").cursor()
    assert cursor().key_size == 2048 and cursor().key_size == 2048
    assert blocker.read_text() == "not a directory"


def test_default_pool_lives_under_trustlab_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    cache = keypool.KeyCache()
    cache.cursor()()
    assert (tmp_path / "cache" / keypool.FILE).is_file()
