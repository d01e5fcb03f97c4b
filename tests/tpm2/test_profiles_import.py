"""TPM 2.0 profiles from the public data: wolfTPM benchmarks and JCAlgTest TPM files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.data.jcalgtest_tpm import parse_entries, parse_tpm_csv
from trustlab.data.wolftpm import chip_family_pairs, keygen_samples, parse_wolftpm_csv
from trustlab.errors import ProfileError
from trustlab.timing import registry

DATA = Path("/work/shared/data")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="shared data not present")
JC = DATA / "jcalgtest" / "tpm"


@needs_data
def test_wolftpm_one_profile_per_chip_with_provenance():
    profiles = parse_wolftpm_csv(DATA / "wolftpm-benchmarks.csv")
    assert len(profiles) == 12
    by = {p.name: p for p in profiles}
    slb = by["infineon-slb9670-wolftpm"]
    assert slb.family == "tpm2"
    ohc = 32 / 1024 / 14.0 * 1000  # 32 bytes at 14 KB/s, the bench's KB being 1024 bytes
    assert slb.mean("ohc") == pytest.approx(ohc, rel=1e-4)
    assert slb.mean("rsa2048_dec") == pytest.approx(163.2 - ohc, rel=1e-4)
    assert slb.mean("ecc256_sign") == pytest.approx(68.9 - ohc, rel=1e-4)
    keygen = slb["rsa2048_keygen"]
    assert keygen.samples and sum(keygen.samples) / len(keygen.samples) == pytest.approx(keygen.mean, rel=1e-3)
    assert keygen.mean == pytest.approx(2196 - 2 * ohc, rel=1e-3)
    for p in profiles:
        for c in p.components.values():
            assert c.provenance.source and c.provenance.table, (p.name, c.name)
    assert "single run" in by["st-st33tphf2xspi-wolftpm"]["rsa2048_keygen"].provenance.note
    ecc = slb["ecc256_keygen"]
    assert ecc.sd == pytest.approx(0.03 * ecc.mean, rel=1e-3) and not ecc.samples
    # a slow RNG (ATTPM20) must not inflate the overhead: the hash bound wins
    assert by["microchip-attpm20-wolftpm"].mean("ohc") == pytest.approx(1000 / 21.3 / 3, rel=1e-3)


@needs_data
def test_jcalgtest_nuvoton_components_and_ignored_entries():
    p = parse_tpm_csv(JC / "NTC_NPCT75x6rls_7.2.0.1.csv")
    assert p.name == "nuvoton-npct75x-7.2.0.1-jcalgtest"
    assert p.mean("ohc") == pytest.approx(11.01)
    assert p.mean("ecc256_sign") == pytest.approx(27.39 - 11.01, abs=1e-6)
    assert p.mean("rsa2048_dec") == pytest.approx(74.80 - 11.01, abs=1e-6)   # NULL scheme preferred
    # ECDSA verification failed on this chip (error 02db): ECSCHNORR is used, and said so
    assert p.mean("ecc256_verify") == pytest.approx(43.76 - 11.01, abs=1e-6)
    assert "0x001c" in p["ecc256_verify"].provenance.note
    assert "line" in p["ecc256_sign"].provenance.table
    keygen = p["rsa2048_keygen"]
    assert min(keygen.samples) >= 800.53 - 11.01 - 1e-6 and max(keygen.samples) <= 24750.06 - 11.01 + 1e-6
    ecc = p["ecc256_keygen"]  # ECC: a normal spread from the observed range
    assert not ecc.samples and ecc.sd == pytest.approx((34.58 - 28.81) / 6, abs=1e-3)
    assert p.mean("ecc384_sign") == pytest.approx(43.74 - 11.01, abs=1e-6)  # other key sizes too
    _, entries = parse_entries(JC / "NTC_NPCT75x6rls_7.2.0.1.csv")
    assert not any(e.command == "TPM2_EncryptDecrypt" for e in entries)  # all failed: ignored


@needs_data
def test_jcalgtest_failed_rsa_keygen_ignored():
    p = parse_tpm_csv(JC / "INTC_Intel_11.8.50.3399.csv")
    assert p.name == "intel-ptt-11.8.50.3399-jcalgtest"
    assert "rsa2048_keygen" not in p.components  # RSA 2048 failed 1004 of 1004 times
    assert set(p.components) == {"ecc256_keygen", "eccbn256_keygen", "rsa1024_keygen"}
    assert "overhead not subtracted" in p["ecc256_keygen"].provenance.note


def test_jcalgtest_decimal_commas_and_bad_files(tmp_path):
    f = tmp_path / "old.csv"
    f.write_text("Manufacturer; ACME\nVendor string; X1\nFirmware version; 1.0\n\nTPM2_GetRandom\n\n"
                 "Data length (bytes):;32\noperation stats (ms/op):;avg op:;10,5;min op:;10,1;max op:;11,0\n"
                 "operation info:;total iterations:;10;successful:;10;failed:;0;error:;None\n\nTPM2_Sign\n\n"
                 "Key parameters:;ECC 0x0003;Scheme:;0x0018\n"
                 "operation stats (ms/op):;avg op:;40,5;min op:;40;max op:;41\n"
                 "operation info:;total iterations:;10;successful:;10;failed:;0;error:;None\n")
    p = parse_tpm_csv(f, name="acme")
    assert p.name == "acme" and p.mean("ohc") == 10.5 and p.mean("ecc256_sign") == pytest.approx(30.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("hello;world\n")
    with pytest.raises(ProfileError, match="Manufacturer"):
        parse_tpm_csv(bad)
    broken = tmp_path / "broken.csv"
    broken.write_text(f.read_text().replace("10,5", "ten"))
    with pytest.raises(ProfileError, match=r"broken.csv:8"):
        parse_tpm_csv(broken)


def test_keygen_samples_keep_mean_and_range():
    xs = keygen_samples(1000.0, lo=300.0, hi=2500.0)
    assert len(xs) == 64 and min(xs) >= 300.0 - 1e-6 and max(xs) <= 2500.0 + 1e-6
    assert sum(xs) / len(xs) == pytest.approx(1000.0, rel=1e-3)


@needs_data
def test_shipped_profiles_are_what_the_builder_makes():
    for p in parse_wolftpm_csv(DATA / "wolftpm-benchmarks.csv") + [parse_tpm_csv(f) for f in sorted(JC.glob("*.csv"))]:
        assert registry.load(p.name).to_toml() == p.to_toml(), f"{p.name}: run tools/build_tpm2_profiles.py"


def test_chip_family_pairs_lists_both_sources():
    pairs = {family: (w, j) for family, w, j in chip_family_pairs()}
    assert pairs["Nuvoton NPCT75x"] == (["nuvoton-npct750-wolftpm"], ["nuvoton-npct75x-7.2.0.1-jcalgtest"])
    assert "stm-st33-73.4.17568.4452-jcalgtest" in pairs["STMicroelectronics ST33"][1]


def test_estimate_tpm2_same_json_shape_as_tpm12(capsys):
    assert main(["estimate", "--profile", "nuvoton-npct750-wolftpm", "TPM2_Sign", "--key", "ecc256", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert main(["estimate", "--profile", "infineon-2010", "TPM_Sign", "--json"]) == 0
    (ref,) = json.loads(capsys.readouterr().out)
    assert set(row) == set(ref)
    p = registry.load("nuvoton-npct750-wolftpm")
    assert row["ms"] == pytest.approx(p.mean("ohc") + p.mean("ecc256_sign"))  # byte rates are 0 here
    assert main(["estimate", "--profile", "nuvoton-npct750-wolftpm", "TPM2_Sign", "--key", "rsa2048"]) == 0
    assert main(["estimate", "--profile", "nuvoton-npct750-wolftpm", "TPM2_Sign", "--key", "dsa"]) == 2
    assert "unknown variant" in capsys.readouterr().err


@needs_data
def test_import_jcalgtest_cli(capsys):
    assert main(["profiles", "import-jcalgtest", str(JC / "STM_73.4.17568.4452.csv"), "--print"]) == 0
    assert 'family = "tpm2"' in capsys.readouterr().out
