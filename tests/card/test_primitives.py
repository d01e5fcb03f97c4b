"""Instrumented primitives and card memory: what is counted, what is charged, RAM vs NVM."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trustlab.devices.card import CardCrypto, Memory, cipher_component
from trustlab.devices.card.memory import CardMemoryError
from trustlab.devices.card.primitives import gf128_mul_int
from trustlab.errors import ProfileError, TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Component, Profile


def profile(**means):
    return Profile("p", {k: Component(k, v) for k, v in means.items()}, family="card")


BASE = {"block_encrypt.aes128": 1.0, "block_encrypt.aes128.nvm": 2.0, "block_xor": 0.1, "block_xor.nvm": 0.4,
        "block_copy": 0.05, "block_copy.nvm": 0.3, "block_shift": 0.2, "block_shift.nvm": 0.5,
        "gf_multiply": 7.0, "ram_write_byte": 0.001, "nvm_write_byte": 0.01}


def test_real_aes_and_charges():
    clock = Clock(profile(**BASE))
    c = CardCrypto(clock)
    key = bytes(range(16))
    kc = c.load_key(key)
    block = bytes(16)
    ref = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(block)
    assert c.encrypt(kc, block) == ref
    assert clock.now_ms == 1.0
    c.encrypt(kc, block, dest="nvm")
    c.xor(block, block, dest="nvm")
    c.copy(block)
    c.shift_left(block)
    c.gf_multiply(block, block)
    assert clock.now_ms == pytest.approx(1 + 2 + 0.4 + 0.05 + 0.2 + 7)
    # the key is loaded once (key_load.aes128 absent from this profile: counted, not charged)
    assert dict(c.ops) == {"E": 2, "load": 1, "xor": 1, "copy": 1, "shift": 1, "gfmul": 1}
    assert clock.by_component["block_encrypt.aes128.nvm"] == 2.0
    c.inc(block)  # counter_inc absent: counted, not charged
    assert c.ops["inc"] == 1 and clock.now_ms == pytest.approx(10.65)


def test_key_load_is_charged_once_per_key_and_message():
    clock = Clock(profile(**BASE, **{"key_load.aes128": 0.25, "block_shift_var": 0.9}))
    c = CardCrypto(clock)
    k1, k2 = c.load_key(bytes(16)), c.load_key(bytes(range(16)))
    with c.phase("init"):  # key set-up shares the message's load: never charged twice
        c.encrypt(k1, bytes(16))
    assert clock.now_ms == pytest.approx(1.0)
    c.start_message()
    for _ in range(3):
        c.encrypt(k1, bytes(16))
    assert clock.now_ms == pytest.approx(1.0 + 0.25 + 3)
    c.encrypt(k2, bytes(16))  # another key: the co-processor's key register is reloaded
    c.decrypt(k2, bytes(16))
    assert c.ops["load"] == 2 and clock.by_component["key_load.aes128"] == pytest.approx(0.5)
    c.start_message()
    c.encrypt(k2, bytes(16))
    assert c.ops["load"] == 3
    before = clock.now_ms
    c.shift_left(bytes(17), 3, variable=True)  # the general BlockShiftLeft routine
    assert clock.now_ms - before == pytest.approx(0.9) and c.ops["vshift"] == 1
    plain = CardCrypto(Clock(profile(**BASE)))
    plain.shift_left(bytes(17), 3, variable=True)  # no variable-shift figure: the fixed routine's
    assert plain.clock.now_ms == pytest.approx(0.2)


def test_missing_component_is_named():
    with pytest.raises(ProfileError, match="block_encrypt.tdes_m1_m2"):
        CardCrypto(Clock(profile(**BASE)), "tdes(m1)||m2")
    c = CardCrypto(Clock(profile(**{k: v for k, v in BASE.items() if k != "gf_multiply"})))
    with pytest.raises(ProfileError, match="gf_multiply"):
        c.gf_multiply(bytes(16), bytes(16))


def test_component_names_and_bad_cipher():
    assert cipher_component("tdes(m1)||tdes(m2)", mask=True, key_clear=True) == \
        "block_encrypt.tdes_m1_tdes_m2+mask+keyclear"
    assert cipher_component("aes128", dest="nvm") == "block_encrypt.aes128.nvm"
    with pytest.raises(TrustlabError, match="unknown block cipher"):
        CardCrypto(cipher="rc4")
    with pytest.raises(TrustlabError, match="16-byte blocks"):
        CardCrypto().encrypt(CardCrypto().load_key(bytes(16)), bytes(8))


def test_gf128_multiply_properties():
    one = 1 << 127  # the field's 1 in GCM bit order
    x = 0x66E94BD4EF8A2C3B884CFA59CA342B2E
    assert gf128_mul_int(x, one) == x and gf128_mul_int(one, x) == x
    y = 0x0388DACE60B6A392F328C2B971B2FE78
    assert gf128_mul_int(x, y) == gf128_mul_int(y, x)
    # GCM test case 2: GHASH(H, {}, C) = (C*H xor len)*H with H = E_K(0) = 66e94bd4...
    s = gf128_mul_int(gf128_mul_int(y, x) ^ 128, x)
    assert s == 0xF38CBB1AD69223DCC3457AE5B6B0F885


def test_memory_ram_vs_nvm():
    clock = Clock(profile(**BASE))
    mem = Memory(clock, ram_size=64, nvm_size=128)
    off = mem.alloc("ram", 32)
    mem.write("ram", off, b"x" * 32)
    ram_ms = clock.now_ms
    mem.write("nvm", 0, b"x" * 32)
    assert ram_ms == pytest.approx(0.032) and clock.now_ms - ram_ms == pytest.approx(0.32)
    assert mem.read("nvm", 0, 4) == b"xxxx"
    with pytest.raises(CardMemoryError, match="cannot allocate"):
        mem.alloc("ram", 64)
    with pytest.raises(CardMemoryError, match="out of bounds"):
        mem.write("nvm", 120, b"y" * 16)
    with pytest.raises(CardMemoryError, match="region"):
        mem.read("eeprom", 0, 1)
    no_nvm = Memory(Clock(profile(ram_write_byte=0.001)))
    with pytest.raises(ProfileError, match="nvm_write_byte"):
        no_nvm.write("nvm", 0, b"z")
