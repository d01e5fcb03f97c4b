"""Replay of a trace whose commands are serve's own 1.85 post-quantum ones (issue 25, evaluator's s8 findings).

"Replaying a trace on its recording profile gives back the sum of its modelled_ms" (docs/trace-format.md):
ML-DSA signing and key generation are random variables in serve (a counted run and a speed quantile drawn
per command from the proxy's ``random.Random(seed)``), so the claim is about draw 0 of the same seed,
``tpm_seed_draw_ms``: replay calls the pricing function serve calls, with the same generator, in the same
order - equal up to float summation order. The median and mean are the model's distribution and
central estimate, not this one recording.
"""

from __future__ import annotations

import json
import shutil

import pytest

from trustlab.cli import main
from trustlab.replay import load
from trustlab.replay import run as replaying

from .traces import write

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
SEED = 7
needs_swtpm = pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The README's ``tpm2 pqc`` flow and more, recorded through serve (virtual time, seed 7)."""
    from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError, external_mu
    from trustlab.serving.proxy import timed_swtpm

    path = tmp_path_factory.mktemp("pqc") / "pqc.jsonl"
    with timed_swtpm(PROFILE, virtual=True, trace=str(path), seed=SEED) as proxy:
        with PqcClient.connect(proxy.tcti) as tpm:
            key = tpm.create_primary("ML-DSA-65")
            for message in (b"one", b"two", b"three"):
                sig = tpm.sign_digest(key.handle, external_mu(key.public.unique, message))
                tpm.verify_digest_signature(key, external_mu(key.public.unique, message), sig)
            tpm.quote(key.handle, [0, 7])
            blob = tpm.context_save(key.handle)
            tpm.flush(key.handle)
            key = tpm.context_load(blob)
            tpm.flush(key.handle)
            streamed = tpm.create_primary("ML-DSA-44", allow_external_mu=False)
            tpm.sign_sequence(streamed.handle, bytes(range(256)) * 12)  # SequenceUpdates absorbing the message
            with pytest.raises(TpmResponseError):  # a failed command: overhead + bytes
                tpm.sign_digest(streamed.handle, b"\x00" * 64)
            tpm.flush(streamed.handle)
            kem = tpm.create_primary("ML-KEM-768")
            _, ciphertext = tpm.encapsulate(kem.handle)
            tpm.decapsulate(kem.handle, ciphertext)
            tpm.flush(kem.handle)
    return path


@needs_swtpm
def test_replay_on_the_recording_profile_gives_the_recorded_sum_back(recorded):
    trace = load.read(recorded)
    lines = [json.loads(x) for x in recorded.read_text().splitlines()]
    recorded_ms = sum(x["modelled_ms"] for x in lines)
    row = replaying.replay(trace, [PROFILE], seed=SEED, draws=50)["profiles"][0]
    assert row["tpm_seed_draw_ms"] == pytest.approx(recorded_ms, rel=1e-12)
    # only the sequence start, which serve too charges as overhead + bytes, is marked (as estimate marks it)
    assert [(n["command"], n["note"]) for n in row["cannot_price"]] == [
        ("TPM2_SignSequenceStart", "overhead only (no model for this command)")]
    # the model's distribution around it: the central estimate is within the draws' range
    assert 0.5 * recorded_ms < row["tpm_mean_ms"] < 2 * recorded_ms
    # each PQC command on its own: draw 0 = what serve charged it (here on the CLI too)
    ops = {x["command"]: x["pqc"] for x in lines if x.get("pqc")}
    assert ops["TPM2_CreatePrimary"]["op"] == "keygen" and ops["TPM2_Quote"] == {"alg": "ML-DSA-65", "op": "sign"}
    assert {"sign", "verify", "load", "encapsulate", "decapsulate", "absorb"} <= {o["op"] for o in ops.values()}


@needs_swtpm
def test_pqc_trace_lines_carry_handles_sessions_and_key_like_classical_ones(recorded):
    lines = [json.loads(x) for x in recorded.read_text().splitlines()]
    create = next(x for x in lines if x["command"] == "TPM2_CreatePrimary" and x["variant"] == "mldsa65")
    assert create["key"] == {"alg": "mldsa65", "sign": True, "decrypt": False, "restricted": False}
    assert create["handles"] == [["0x40000001", None]] and create["sessions"] == ["password"]
    sign = next(x for x in lines if x["command"] == "TPM2_SignDigest" and x["rc"] == 0)
    assert sign["handles"] == [["0x80ff0000", "mldsa65"]] and sign["sessions"] == ["password"]
    decaps = next(x for x in lines if x["command"] == "TPM2_Decapsulate")
    assert decaps["handles"][0][1] == "mlkem768"


@needs_swtpm
def test_the_trace_prices_on_a_chip_of_today_with_the_pqc_model_and_says_what_does_not_fit(recorded, capsys):
    today = "infineon-slb9672-wolftpm"
    assert main(["replay", str(recorded), "--profiles", f"{PROFILE},{today}", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["profiles"]
    by = {r["profile"]: r for r in rows}
    top = {t["command"]: t for t in by[today]["top"]}
    assert top["TPM2_CreatePrimary"]["ms"] > 1000  # ML-DSA key generation, not 3 x overhead
    assert not any(n["command"] in ("TPM2_SignDigest", "TPM2_Encapsulate") for n in by[today]["cannot_price"])
    unfit = {(u["command"], u["frame"]) for u in by[today]["does_not_fit"]}
    assert ("TPM2_VerifyDigestSignature", "command") in unfit and ("TPM2_SignDigest", "response") in unfit
    assert by[PROFILE]["does_not_fit"] == []


def test_a_pqc_operation_the_model_cannot_price_is_listed_not_charged_as_overhead(tmp_path, capsys):
    from .traces import line

    path = write(tmp_path, line(command="TPM2_SignDigest", variant="mldsa65", code="0x1a6",
                                pqc={"alg": "ML-DSA-13", "op": "sign"}))
    assert main(["replay", str(path), "--profiles", PROFILE, "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["profiles"][0]
    assert [n["command"] for n in row["cannot_price"]] == ["TPM2_SignDigest"]
    assert "cannot price" in row["cannot_price"][0]["note"] and "ML-DSA-13" in row["cannot_price"][0]["note"]


def test_a_pqc_trace_recorded_before_the_pqc_field_is_priced_from_command_and_key(tmp_path, capsys):
    """serve before the ``pqc`` field: the handler's operation is read off command + parameter set."""
    from trustlab.devices.tpm2.pqc import pricing
    from trustlab.timing import registry

    from .traces import line

    path = write(tmp_path, line(command="TPM2_Encapsulate", variant="mlkem768", in_bytes=14, out_bytes=1134))
    assert main(["replay", str(path), "--profiles", PROFILE, "--json", "--draws", "1"]) == 0
    row = json.loads(capsys.readouterr().out)["profiles"][0]
    expected = sum(pricing.operation_ms(registry.load(PROFILE), None, "ML-KEM-768", "encapsulate", in_bytes=14,
                                        out_bytes=1134).values())
    assert row["tpm_mean_ms"] == pytest.approx(expected)
    assert row["cannot_price"] == []


def test_each_appended_recording_restarts_serves_draws(tmp_path):
    """An appended segment is another serve run: its extension generator starts again at Random(seed)."""
    import random

    from trustlab.devices.tpm2.pqc import pricing
    from trustlab.timing import registry

    from .traces import line

    sign = dict(command="TPM2_SignDigest", variant="mldsa65", in_bytes=103, out_bytes=3332,
                pqc={"alg": "ML-DSA-65", "op": "sign"})
    path = write(tmp_path, line(seq=1, **sign), line(seq=2, **sign), line(seq=1, **sign))
    row = replaying.replay(load.read(path), [PROFILE], seed=3, draws=1)["profiles"][0]
    rng, profile = random.Random(3), registry.load(PROFILE)
    first_run = [sum(pricing.operation_ms(profile, rng, "ML-DSA-65", "sign", in_bytes=103, out_bytes=3332).values())
                 for _ in range(2)]
    assert row["tpm_seed_draw_ms"] == pytest.approx(sum(first_run) + first_run[0], rel=1e-12)


def test_frames_over_a_chips_buffer_are_listed_with_command_and_frame(tmp_path, capsys):
    """A 2048-byte chip cannot take a 3395-byte VerifyDigestSignature nor answer a 3332-byte SignDigest;
    the resource manager's own context blobs count too. With --pqc the column says so on every chip."""
    from .traces import line

    path = write(tmp_path, line(seq=1, command="TPM2_VerifyDigestSignature", variant="mldsa65", in_bytes=3395,
                                out_bytes=20, pqc={"alg": "ML-DSA-65", "op": "verify"}),
                 line(seq=2, command="TPM2_SignDigest", variant="mldsa65", in_bytes=103, out_bytes=3332,
                      pqc={"alg": "ML-DSA-65", "op": "sign"}, rm=[["TPM2_ContextLoad", 2102, 14, 0]]))
    today = "st-st33ktpm2xspi-wolftpm"
    assert main(["replay", str(path), "--profiles", f"{today},{PROFILE}", "--json", "--pqc", "sign=ML-DSA-65"]) == 0
    rows = {r["profile"]: r for r in json.loads(capsys.readouterr().out)["profiles"]}
    unfit = {(u["command"], u["frame"], u["bytes"], u["limit"]) for u in rows[today]["does_not_fit"]}
    assert unfit == {("TPM2_VerifyDigestSignature", "command", 3395, 2048), ("TPM2_SignDigest", "response", 3332, 2048),
                     ("TPM2_ContextLoad", "command", 2102, 2048)}
    assert {"TPM2_VerifyDigestSignature", "TPM2_SignDigest"} <= set(rows[today]["pqc"]["not_fitting"])
    assert rows[PROFILE]["does_not_fit"] == [] and rows[PROFILE]["pqc"]["not_fitting"] == []
    assert main(["replay", str(path), "--profiles", f"{today},{PROFILE}", "--pqc", "sign=ML-DSA-65"]) == 0
    text = capsys.readouterr().out
    assert "Does not fit" in text and "VerifyDigestSignature (mldsa65) command 3395 B" in text
    assert "Nothing to rewrite" in text and f"{today} " in text  # full names, as --profiles takes them


def test_the_object_tables_parameter_sets_are_the_handlers():
    """objects.py names 1.85 keys without importing the handlers (they import it): the same names."""
    from trustlab.devices.tpm2 import objects
    from trustlab.devices.tpm2.pqc import keys

    for n, p in keys.MLDSA_SETS.items():
        assert objects.PQC_PARAMETER_SETS["mldsa"][n] == p.variant
    for n, p in keys.MLKEM_SETS.items():
        assert objects.PQC_PARAMETER_SETS["mlkem"][n] == p.variant


@pytest.mark.parametrize("command, pqc, says", [
    ("TPM2_GetRandom", {"alg": "ML-DSA-65", "op": "sign"}, "no post-quantum operation for TPM2_GetRandom"),
    ("TPM2_SignDigest", {"alg": "ML-DSA-65", "op": "decapsulate"}, "TPM2_SignDigest as sign"),
    ("TPM2_ContextSave", {"alg": "ML-DSA-65", "op": "load"}, "no post-quantum operation for TPM2_ContextSave"),
])
def test_a_pqc_field_on_a_command_serve_never_prices_so_is_one_line_naming_file_and_line(tmp_path, capsys,
                                                                                           command, pqc, says):
    """An edited trace cannot charge an ML-DSA signature to a TPM2_GetRandom."""
    from .traces import line

    path = write(tmp_path, line(command=command, variant="mldsa65", pqc=pqc))
    assert main(["replay", str(path), "--profiles", PROFILE, "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:1: field 'pqc' says {pqc['op']}" in err and says in err and len(err.splitlines()) == 1
