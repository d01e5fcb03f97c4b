"""``trustlab estimate`` prices the TPM 2.0 Library 1.85 commands serve answers (evaluator s8, finding 4).

The README says estimate "prices every command serve charges": serve's 1.85 extension charges SignDigest,
VerifyDigestSignature, the sequence completions, Encapsulate, Decapsulate and post-quantum key creation and
loading with the PQC cost model, so estimate gives that price (the model's means), per parameter set.
"""

from __future__ import annotations

import json

import pytest

from trustlab.cli import main
from trustlab.devices.tpm2.pqc import pricing
from trustlab.timing import registry

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
TODAY = "st-st33ktpm2xspi-wolftpm"  # a 2048-byte buffer (chips.toml)


def _rows(capsys, *argv) -> list[dict]:
    assert main(["estimate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sign_digest_costs_what_serve_and_replay_charge(capsys, tmp_path):
    (row,) = _rows(capsys, "--profile", PROFILE, "TPM2_SignDigest", "--key", "ML-DSA-65", "--in-bytes", "103",
                   "--out-bytes", "3332")
    expected = pricing.operation_ms(registry.load(PROFILE), None, "ML-DSA-65", "sign", in_bytes=103, out_bytes=3332)
    assert row["key"] == "ML-DSA-65" and row["ms"] == pytest.approx(sum(expected.values()))
    assert row["breakdown"] == pytest.approx(expected) and "PQC cost model" in row["formula_source"]
    trace = tmp_path / "t.jsonl"  # the same command in a trace, replayed: the same central estimate
    trace.write_text(json.dumps({"v": 2, "seq": 1, "command": "TPM2_SignDigest", "code": "0x1a6", "variant": "mldsa65",
                                 "in_bytes": 103, "out_bytes": 3332, "rc": 0, "modelled_ms": 1.0, "served_ms": 1.0,
                                 "t_ms": 0.0, "pqc": {"alg": "ML-DSA-65", "op": "sign"}}) + "\n")
    assert main(["replay", str(trace), "--profiles", PROFILE, "--json", "--draws", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["profiles"][0]["tpm_mean_ms"] == pytest.approx(row["ms"])


@pytest.mark.parametrize("key", ["ML-DSA-65", "mldsa65", "ml-dsa-65"])
def test_key_creation_with_a_post_quantum_key_is_the_model_keygen(capsys, key):
    (row,) = _rows(capsys, "--profile", PROFILE, "TPM2_CreatePrimary", "--key", key)
    assert row["key"] == "ML-DSA-65" and row["ms"] > 100 * row["breakdown"]["ohc"]


def test_without_key_every_parameter_set_the_command_takes(capsys):
    rows = _rows(capsys, "--profile", PROFILE, "TPM2_Encapsulate", "TPM2_Decapsulate")
    assert [(r["command"], r["key"]) for r in rows] == [("TPM2_Encapsulate", "ML-KEM-768"),
                                                        ("TPM2_Encapsulate", "ML-KEM-1024"),
                                                        ("TPM2_Decapsulate", "ML-KEM-768"),
                                                        ("TPM2_Decapsulate", "ML-KEM-1024")]


def test_the_listing_includes_the_185_commands(capsys):
    rows = _rows(capsys, "--profile", PROFILE)
    listed = {(r["command"], r.get("key")) for r in rows}
    assert ("TPM2_SignDigest", "ML-DSA-87") in listed and ("TPM2_Decapsulate", "ML-KEM-1024") in listed
    assert ("TPM2_GetRandom", None) in listed  # the classical listing stays
    pqc_only = _rows(capsys, "--profile", PROFILE, "--key", "ML-KEM-768")
    assert {r["key"] for r in pqc_only} == {"ML-KEM-768"} and len(pqc_only) == 6


def test_a_frame_over_the_chips_buffer_is_noted(capsys):
    (row,) = _rows(capsys, "--profile", TODAY, "TPM2_VerifyDigestSignature", "--key", "ML-DSA-65")
    assert row["note"].startswith("does not fit") and "2048" in row["note"]


def test_a_185_command_on_a_classical_key_is_priced_as_serve_does(capsys):
    (row,) = _rows(capsys, "--profile", PROFILE, "TPM2_SignDigest", "--key", "ecc256")
    assert row["command"] == "TPM2_Sign[ecc256]" and "ecc256_sign" in row["breakdown"]


@pytest.mark.parametrize("argv, message", [
    (["TPM2_Encapsulate", "--key", "ML-DSA-65"], "TPM2_Encapsulate takes a post-quantum key (ML-KEM-768"),
    (["TPM2_GetRandom", "--key", "ML-DSA-65"], "TPM2_GetRandom takes no post-quantum key"),
    (["TPM2_Encapsulate", "--key", "ecc256"], "TPM2_Encapsulate takes a post-quantum key"),
    (["TPM2_SignDigest", "--key", "ML-DSA-99"],  # not "TPM2_Sign: unknown variant" (the 1.83 command's formula)
     "TPM2_SignDigest: unknown post-quantum key 'ML-DSA-99' (known: ML-DSA-44, ML-DSA-65, ML-DSA-87)"),
    (["TPM2_Create", "--key", "ml-kem-99"], "TPM2_Create: unknown post-quantum key 'ml-kem-99' (known: ML-DSA-44"),
])
def test_a_key_that_does_not_apply_is_one_clear_line(capsys, argv, message):
    assert main(["estimate", "--profile", PROFILE, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
