"""Fixtures: every test gets its own swtpm on free ports (as tpm2-pytss's own tests do)."""

from __future__ import annotations

import shutil

import pytest

from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import Swtpm
from trustlab.timing.profile import Component, Profile, Provenance

needs_swtpm = pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")


def make_profile(name: str = "test-tpm2", **means: float) -> Profile:
    """A tpm2 profile with the given component means (ms); units follow the names."""
    comps = {}
    for comp, mean in means.items():
        unit = "byte" if comp in ("ohir", "ohor", "sha256_byte") else "call"
        comps[comp] = Component(comp, mean, unit, provenance=Provenance(source="test fixture"))
    return Profile(name=name, components=comps, family="tpm2", provenance=Provenance(source="test fixture"))


ZERO = dict(ohc=0.0, ohir=0.0, ohor=0.0, sha256_byte=0.0, hmac=0.0, rsa2048_sign=0.0, rsa2048_dec=0.0,
            rsa2048_enc=0.0, ecc256_sign=0.0, ecc256_verify=0.0, ecc256_ecdh=0.0, rsa2048_keygen=0.0,
            ecc256_keygen=0.0, nv_write=0.0, nv_increment=0.0)


@pytest.fixture
def swtpm():
    if shutil.which("swtpm") is None:
        pytest.skip("swtpm not installed")
    with Swtpm() as tpm:
        yield tpm


@pytest.fixture
def zero_profile() -> Profile:
    return make_profile("zero", **ZERO)


@pytest.fixture
def virtual_proxy(swtpm, zero_profile):
    with TimingProxy(zero_profile, swtpm, virtual=True) as proxy:
        yield proxy
