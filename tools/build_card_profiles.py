"""Build the shipped smart-card profiles from their sources.

    .venv/bin/python tools/build_card_profiles.py [--jcalgtest DIR]

* ``src/trustlab/timing/profiles/card/*.toml`` (family ``card``): the primitive
  benchmarks of Mayes, "Multi-Platform Performance of Authenticated Encryption
  for Payment Cards with Crypto Co-processors" (IJAS 10(3&4), 2017) --
  Tables II (MULTOS on SLE78), V and VI (native S3CC9E8 before/after
  optimisation), VIII (native SLE78) and XI (oscilloscope method, ``scope.*``).
  Figures are transcribed here, once, with their table; nothing downstream
  holds a number of its own.
* ``src/trustlab/timing/profiles/javacard/*.toml`` (family ``javacard``): one
  profile per JCAlgTest Java Card file in ``../shared/data/jcalgtest/javacard``.

Derived components say so in their note: the GF(2^128) multiply on chips
without GF hardware is priced as SP 800-38D Algorithm 1 in software, 128
iterations of a block shift plus (on average) half a block XOR; per-byte
memory writes are a block copy divided by 16.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from trustlab.data.jcalgtest_card import parse_card_csv  # noqa: E402
from trustlab.timing.profile import Component, Profile, Provenance, save_toml  # noqa: E402

PAPER = ("Mayes, Multi-Platform Performance of Authenticated Encryption for Payment Cards "
         "with Crypto Co-processors, Int. J. Adv. Security 10(3&4), 2017")
OUT = ROOT / "src" / "trustlab" / "timing" / "profiles"


def comp(name: str, mean: float, table: str, note: str = "", unit: str = "call") -> Component:
    return Component(name, float(mean), unit=unit, provenance=Provenance(PAPER, table, note))


def gf_derived(shift: float, xor: float, table: str) -> Component:
    return comp("gf_multiply", 128 * (shift + 0.5 * xor), table,
                "derived, not measured: SP 800-38D Algorithm 1 in software = 128 x (block_shift + 0.5 x block_xor)")


def per_byte(name: str, copy_ms: float, table: str, what: str) -> Component:
    return comp(name, copy_ms / 16, table, f"derived: {what} block copy / 16 bytes (includes call overhead)", "byte")


def card_profiles() -> list[Profile]:
    t2, t5, t6, t8, t11 = "Table II", "Table V", "Table VI", "Table VIII", "Table XI"
    multos = Profile("multos-sle78", {c.name: c for c in [
        comp("block_encrypt.aes128", 3.3, t2, "AES-128 block encrypt via MULTOS primitive, output to RAM"),
        comp("block_encrypt.aes128.nvm", 6.4, t2, "output to NVM"),
        comp("block_xor", 0.73, t2, "multosBlockXor primitive, RAM (the 'Used' column)"),
        comp("block_xor.nvm", 3.94, t2, "primitive, output to NVM"),
        comp("block_xor.app", 3.21, t2, "XOR written at application level, RAM (not used by the modes)"),
        comp("block_xor.app.nvm", 15.84, t2, "application level, NVM"),
        comp("block_shift", 1.24, t2, "multosBlockShiftLeft/Right primitive, RAM"),
        comp("block_shift.nvm", 2.7, t2, "second figure of the row; read as primitive to NVM (the row is ambiguous)"),
        comp("block_copy", 0.36, t2, "primitive, RAM"),
        comp("block_copy.nvm", 0.65, t2, "primitive, NVM"),
        comp("gf_multiply", 199.0, t2, "application-level GF(2^128) multiply (SP 800-38D Algorithm 1 on "
             "multosBlockShiftRight and multosBlockXor)"),
        per_byte("ram_write_byte", 0.36, t2, "RAM"),
        per_byte("nvm_write_byte", 0.65, t2, "NVM"),
        comp("scope.block_xor", 0.4695, t11, "oscilloscope method (PN-P1)/(N-1)"),
        comp("scope.block_encrypt.aes128", 5.3854, t11, "oscilloscope method (PN-P1)/(N-1)"),
    ]}, family="card", version="1", description="MULTOS ML3 platform on Infineon SLE78 (API-level primitives)",
        provenance=Provenance(PAPER, "Tables II and XI", "application/API level; rough benchmark figures "
                              "(Table II) and precise oscilloscope figures (Table XI)"))

    tdes_sub = {"des_m1_m2": 0.128, "des_m1_des_m2": 0.141, "des_m1_des_m2+mask": 0.146,
                "des_m1_des_m2+mask+keyclear": 0.154, "tdes_m1_m2": 0.140, "tdes_m1_tdes_m2": 0.163,
                "tdes_m1_tdes_m2+mask": 0.169, "tdes_m1_tdes_m2+mask+keyclear": 0.178}
    s3 = Profile("s3cc9e8-native", {c.name: c for c in [
        comp("block_xor", 0.071, t6, "FixBlockXor, optimised native C; includes test command handling"),
        comp("block_copy", 0.064, t6, "FixBlockCopy"),
        comp("block_shift", 0.073, t6, "FixBlockShiftLeft (one place)"),
        *[comp(f"block_encrypt.{k}", v, t6, "substitute 16-byte block cipher on the DES co-processor")
          for k, v in tdes_sub.items()],
        gf_derived(0.073, 0.071, t6),
        per_byte("ram_write_byte", 0.064, t6, "RAM"),
        comp("scope.block_xor", 0.0191, t11, "oscilloscope method"),
        comp("scope.block_encrypt.tdes_m1_m2", 0.0966, t11, "oscilloscope method; TDES(M1)||M2"),
    ]}, family="card", version="1", description="Samsung S3CC9E8 16-bit card chip, native C after optimisation",
        provenance=Provenance(PAPER, "Tables VI and XI", "no AES co-processor: 16-byte substitutes built on DES/TDES"))

    s3_orig = Profile("s3cc9e8-native-original", {c.name: c for c in [
        comp("block_xor", 0.161, t5, "original byte-wise BlockXor"),
        comp("block_copy", 0.114, t5, "original BlockCopy"),
        comp("block_shift", 0.330, t5, "original variable BlockShiftLeft"),
        comp("block_encrypt.tdes_m1_tdes_m2+mask", 0.608, t5, "ECB TDES || TDES + mask, original"),
        gf_derived(0.330, 0.161, t5),
        per_byte("ram_write_byte", 0.114, t5, "RAM"),
    ]}, family="card", version="1", description="Samsung S3CC9E8 native C before optimisation (MULTOS code port)",
        provenance=Provenance(PAPER, "Table V, 'Original' column"))

    s3_mid = Profile("s3cc9e8-native-stage1", {c.name: c for c in [
        comp("block_xor", 0.071, t5, "aligned 32-bit BlockXor, functional calls still used"),
        comp("block_copy", 0.064, t5, "aligned BlockCopy"),
        comp("block_shift", 0.073, t5, "FixBlockShiftLeft"),
        comp("block_encrypt.tdes_m1_tdes_m2+mask", 0.381, t5, "ECB TDES || TDES + mask, core functions optimised "
             "but not yet in-line"),
        gf_derived(0.073, 0.071, t5),
        per_byte("ram_write_byte", 0.064, t5, "RAM"),
    ]}, family="card", version="1", description="Samsung S3CC9E8 native C, first optimisation stage",
        provenance=Provenance(PAPER, "Table V, 'Optimised' column"))

    sle = Profile("sle78-native", {c.name: c for c in [
        comp("block_xor", 0.006, t8, "FixBlockXor, native C; at the limit of the test system's accuracy"),
        comp("block_copy", 0.004, t8, "FixBlockCopy"),
        comp("block_shift", 0.006, t8, "FixBlockShiftLeft"),
        comp("block_encrypt.aes128", 0.041, t8, "AES-128 on the crypto co-processor"),
        comp("block_encrypt.tdes_m1_m2", 0.027, t8, "TDES(M1)||M2 substitute"),
        gf_derived(0.006, 0.006, t8),
        per_byte("ram_write_byte", 0.004, t8, "RAM"),
        comp("scope.block_xor", 0.0038, t11, "oscilloscope method"),
        comp("scope.block_encrypt.aes128", 0.0390, t11, "oscilloscope method"),
        comp("scope.block_encrypt.tdes_m1_m2", 0.0251, t11, "oscilloscope method (printed '0.0.0251')"),
    ]}, family="card", version="1", description="Infineon SLE78 native C (AES and TDES(M1)||M2 applications)",
        provenance=Provenance(PAPER, "Tables VIII and XI"))
    return [multos, s3, s3_orig, s3_mid, sle]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jcalgtest", type=Path, default=ROOT.parent / "shared" / "data" / "jcalgtest" / "javacard")
    args = ap.parse_args(argv)
    (OUT / "card").mkdir(parents=True, exist_ok=True)
    for p in card_profiles():
        save_toml(p, OUT / "card" / f"{p.name}.toml")
        print(f"card/{p.name}.toml: {len(p.components)} components")
    if args.jcalgtest.is_dir():
        (OUT / "javacard").mkdir(parents=True, exist_ok=True)
        for f in sorted(args.jcalgtest.glob("*.csv")):
            p = parse_card_csv(f)
            save_toml(p, OUT / "javacard" / f"{p.name}.toml")
            print(f"javacard/{p.name}.toml: {len(p.components)} components")
    else:
        print(f"no JCAlgTest data at {args.jcalgtest}; Java Card profiles not rebuilt", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
