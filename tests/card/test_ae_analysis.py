"""Workload counts, predictions (simulation == analytic model), TIGA, the experiment and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trustlab.apps.ae.analysis import (
    PAPER_MODES, PAPER_SIZES, analytic_ms, coprocessor_tiga_s3cc9e8, payload, predict, tiga, workload,
)
from trustlab.devices.card.platforms import FLAGSHIP, platform
from trustlab.errors import TrustlabError

# Table I of Mayes (2017), used only as a reference in these tests.
TABLE_I = {8: (1, 3, 1, 2, 2, 3, 2), 16: (1, 3, 1, 2, 2, 3, 2), 20: (2, 4, 1, 3, 3, 5, 4),
           32: (2, 4, 1, 3, 3, 5, 4), 40: (3, 5, 1, 4, 4, 7, 6), 64: (4, 6, 1, 5, 5, 9, 8),
           128: (8, 10, 1, 9, 9, 17, 16), 192: (12, 14, 1, 13, 13, 25, 24)}


@pytest.mark.parametrize("n", PAPER_SIZES)
def test_counted_workload_against_table_i(n):
    blks, ocb_e, ocb_init, gcm_e, gcm_mul, ccm_e, etm_e = TABLE_I[n]
    assert workload("ocb3", n)["blocks"] == blks
    assert (workload("ocb3", n)["E"], workload("ocb3", n)["E_init"]) == (ocb_e, ocb_init)
    assert workload("ocb2", n)["E"] == ocb_e and workload("ocb2", n)["E_init"] == 0  # no AD: no E_K(0)
    assert (workload("gcm", n)["E"], workload("gcm", n)["gfmul"]) == (gcm_e, gcm_mul)
    assert workload("etm", n)["E"] == etm_e          # the paper's ETM: MAC over C (§III, Figure 3)
    assert workload("etm-iso", n)["E"] == etm_e + 1  # ISO 19772 mechanism 5 MACs S || C
    assert workload("ccm", n)["E"] == ccm_e + 1      # B0 + m, Ctr0 + m: the paper lists one fewer


def test_workload_counts_scale_with_multi_apdu_messages():
    assert workload("ocb3", 1024)["E"] == 64 + 2
    assert workload("ccm", 1000)["E"] == 2 * 63 + 2


def test_payload_padding():
    assert len(payload("ccm", 20)) == 32 and len(payload("ocb3", 20)) == 20
    assert len(payload("etm", 20, pad=False)) == 20
    with pytest.raises(TrustlabError):
        payload("ccm", -1)


@pytest.mark.parametrize("name", FLAGSHIP + ("sle78-tdes", "s3cc9e8-original"))
def test_simulation_equals_analytic_model(name):
    plat = platform(name)
    prof = plat.profile()
    for row in predict(plat, PAPER_MODES, (8, 40, 192)):
        assert row.predicted_ms == pytest.approx(analytic_ms(prof, plat.cipher, row.ops, plat.mask), rel=1e-12)
        assert row.predicted_ms == pytest.approx(row.setup_ms + row.message_ms)
        assert set(row.limited_by.values()) <= {"processing", "communication"}
        for rate, tx in row.tx_ms.items():
            assert row.limited_by[rate] == ("processing" if row.predicted_ms > tx else "communication")


def test_predictions_follow_the_profile_and_setup_option():
    plat = platform("multos-sle78")
    once = {(r.mode, r.bytes): r for r in predict(plat, ("ocb3",), (64,), setup_per_message=False)}
    each = {(r.mode, r.bytes): r for r in predict(plat, ("ocb3",), (64,))}
    assert once[("ocb3", 64)].setup_ms == 0
    assert each[("ocb3", 64)].predicted_ms - once[("ocb3", 64)].predicted_ms == pytest.approx(each[("ocb3", 64)].setup_ms)
    # one more block encryption costs exactly the profile's block encrypt (3.3 ms on MULTOS)
    r = {x.bytes: x.predicted_ms for x in predict(plat, ("etm",), (16, 32))}
    assert r[32] - r[16] == pytest.approx(2 * 3.3 + 0.73 * 2)  # 2 E + XOR (CTR) + XOR (CBC chaining)


def test_nvm_buffers_cost_more_and_match_the_model():
    plat = platform("multos-sle78")
    ram = predict(plat, ("etm", "ccm"), (32,))
    nvm = predict(plat, ("etm", "ccm"), (32,), dest="nvm")
    for r, n in zip(ram, nvm):
        assert n.ops == r.ops and n.predicted_ms > r.predicted_ms
        assert n.predicted_ms == pytest.approx(analytic_ms(plat.profile(), plat.cipher, n.ops, dest="nvm"))
    from trustlab.errors import ProfileError

    with pytest.raises(ProfileError, match="block_encrypt.aes128.nvm"):
        predict(platform("sle78-aes"), ("etm",), (16,), dest="nvm")


def test_multi_apdu_and_char_link():
    rows = predict(platform("sle78-aes"), ("ocb3",), (600,), link_mode="char", protocol="T=0")
    assert rows[0].apdus == 3 and rows[0].card_link_ms > 0
    paper = predict(platform("sle78-aes"), ("ocb3",), (600,))[0]
    assert rows[0].predicted_ms == pytest.approx(paper.predicted_ms)
    assert all(rows[0].tx_ms[r] > paper.tx_ms[r] for r in paper.tx_ms)


def test_tiga_values():
    assert tiga(platform("multos-sle78")).tiga_pct == pytest.approx(8.72, abs=0.01)
    assert tiga(platform("s3cc9e8")).tiga_pct == pytest.approx(19.80, abs=0.05)
    assert tiga(platform("multos-sle78"), "benchmark").tiga_pct == pytest.approx(22.1, abs=0.1)
    co = coprocessor_tiga_s3cc9e8(platform("s3cc9e8").profile())
    assert 90 < co["tiga_des_pct"] < 105 and 30 < co["tiga_3des_pct"] < 35
    with pytest.raises(TrustlabError, match="no scope figures"):
        tiga(platform("s3cc9e8-original"), "scope")


def test_unknown_platform_and_custom_profile(tmp_path):
    with pytest.raises(TrustlabError, match="unknown platform"):
        platform("nope")
    with pytest.raises(TrustlabError, match="unknown cipher"):
        platform("sle78-native:rot13")
    plat = platform("sle78-native:tdes(m1)||m2")
    assert plat.cipher == "tdes(m1)||m2"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    """The real CLI entry point, in-process (a subprocess per call costs seconds of imports)."""
    from trustlab.cli import main

    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_experiment_json_rows_and_report():
    from argparse import Namespace

    from trustlab.experiments.ae import AEExperiment

    exp = AEExperiment()
    args = Namespace(platform=["multos-sle78,sle78-aes"], mode=PAPER_MODES, bytes=PAPER_SIZES, link="paper",
                     protocol=None, no_pad=False, key_setup="message", buffers="ram")
    res = exp.run(args)
    assert len(res.data) == 2 * 5 * 8
    row = res.data[0]
    assert set(row) >= {"platform", "mode", "bytes", "predicted_ms", "ops", "tx_ms", "limited_by"}
    assert "Fastest mode by size" in res.text and "Workload" in res.text and "OCB2 is broken" in res.text
    labels = {r.label for r in res.references}
    assert "TIGA multos-sle78" in labels and "Table I 8 B CCM E" in labels
    xii = [r for r in res.references if r.label.startswith("Table XII")]
    assert xii and all(abs(r.error) < 0.011 for r in xii if "38.09" not in r.source)
    assert json.dumps(res.to_record(), default=str)


def test_the_largest_message_the_card_buffer_takes_runs_on_every_link(capsys):
    from trustlab.apps.ae.analysis import CARD_BUFFER, largest_message

    assert largest_message(("ocb3", "ccm")) == CARD_BUFFER == 1024
    for link in ("paper", "char"):
        rc, out, err = _cli(capsys, "run", "ae", "--platform", "s3cc9e8", "--mode", "ocb3,ccm", "--bytes", "1023,1024",
                            "--link", link, "--json")
        assert rc == 0, err
        assert [r["bytes"] for r in json.loads(out)] == [1023, 1024, 1023, 1024]


def test_cli_run_and_tiga(capsys):
    rc, out, err = _cli(capsys, "run", "ae", "--platform", "s3cc9e8", "--mode", "etm,ccm", "--bytes", "8,300",
                        "--json")
    assert rc == 0, err
    rows = json.loads(out)
    assert {r["bytes"] for r in rows} == {8, 300} and rows[-1]["apdus"] == 2
    rc, out, err = _cli(capsys, "tiga", "--platform", "multos-sle78", "--json")
    assert rc == 0 and json.loads(out)[0]["tiga_pct"] == pytest.approx(8.718, abs=0.001)
    rc, out, err = _cli(capsys, "run", "ae", "--platform", "nope")
    assert rc == 2 and "unknown platform" in err
    rc, out, err = _cli(capsys, "tiga", "--platform", "s3cc9e8-original", "--source", "scope")
    assert rc == 2 and "no scope figures" in err


@pytest.mark.parametrize("argv, message", [
    (["run", "ae", "--bytes", "x"], "--bytes 'x': must be whole numbers"),
    (["run", "ae", "--mode", "eax"], "--mode: unknown mode eax"),
    # QA: empty selections used to "succeed" over nothing
    (["run", "ae", "--platform", ","], "--platform: empty list"),
    (["run", "ae", "--platform", "sle78-aes,,s3cc9e8"], "--platform 'sle78-aes,,s3cc9e8': empty item"),
    (["run", "ae", "--mode", ","], "--mode: empty list"),
    (["run", "ae", "--bytes", "8,,16"], "--bytes '8,,16': empty item"),
    # QA: accepted up to 4096, then the card answered 6A84; the buffer is stated up front now
    (["run", "ae", "--link", "char", "--bytes", "8,4096"],
     "--bytes 4096: more than the card's message buffer takes: at most 1024 bytes on multos-sle78, s3cc9e8, "
     "sle78-aes with --link char"),
    (["run", "ae", "--platform", "sle78-tdes", "--bytes", "1025", "--no-pad"], "at most 1024 bytes on sle78-tdes"),
    (["run", "ae", "--bytes", "-1"], "--bytes '-1': message sizes must not be negative"),
    (["tiga", "--platform", ","], "--platform: empty list"),
    (["tiga", "--platform", "sle78-aes", "--platform", " "], "--platform: empty list"),
])
def test_cli_bad_arguments_exit_cleanly(argv, message, capsys):
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and out == ""
    assert err == f"trustlab: error: {err.split('trustlab: error: ', 1)[1]}" and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err


def test_every_ae_and_tiga_argument_has_help():
    import argparse

    from trustlab.cli import build_parser
    from trustlab.experiments.registry import get

    parser = argparse.ArgumentParser()
    get("ae").add_arguments(parser)
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for p in (parser, sub.choices["tiga"]):
        assert [a.dest for a in p._actions if a.dest != "help" and not a.help] == []


def test_subprocess_entry_point_smoke():
    out = subprocess.run([sys.executable, "-m", "trustlab", "tiga", "--platform", "sle78-aes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "sle78-aes" in out.stdout


def test_flagship_argv_lists_run():
    from trustlab.experiments.ae import AEExperiment
    from trustlab.experiments.registry import experiment_parser

    seen = set()
    for argv in AEExperiment.flagship:
        args = experiment_parser("ae").parse_args(argv)
        res = AEExperiment().run(args)
        seen |= {r["platform"] for r in res.data}
        assert res.plots and res.references
    assert {"multos-sle78", "s3cc9e8", "sle78-aes"} <= seen


def test_each_prediction_names_its_components_and_the_paper_statements_are_counted():
    import argparse

    from trustlab.experiments.ae import AEExperiment

    plat = platform("s3cc9e8")
    rows = predict(plat, ("ccm", "ocb3"), (8, 192))
    for r in rows:  # the per-component split adds up to the prediction, key load once per message
        assert sum(r.components_ms.values()) == pytest.approx(r.predicted_ms)
        assert r.ops["load"] == 1 and r.components_ms["key_load.tdes_m1_m2"] == pytest.approx(0.0085)
    assert "block_shift_var" in {k for r in rows if r.mode == "ocb3" for k in r.components_ms}
    exp = AEExperiment()
    ap = argparse.ArgumentParser()
    exp.add_arguments(ap)
    res = exp.run(ap.parse_args(["--platform", "multos-sle78,sle78-aes", "--mode", "ocb2,ocb3,ccm,etm"]))
    said = [r for r in res.references if r.unit == "sizes"]
    assert {r.label.split(":")[0] for r in said} == {"multos-sle78", "sle78-aes"}
    assert all(0 <= r.model <= 8 for r in said) and "What drives the prediction" in res.text


def test_engine_reading_of_the_split_is_shown_not_charged():
    from trustlab.apps.ae.analysis import engine_reading

    plat = platform("s3cc9e8")
    prof = plat.profile()
    alt = engine_reading(prof, plat.cipher)
    # the same stand-alone figure, split differently: Table VI net of handling
    standalone = prof.mean("block_encrypt.tdes_m1_m2") + prof.mean("key_load.tdes_m1_m2")
    assert alt.mean("block_encrypt.tdes_m1_m2") + alt.mean("key_load.tdes_m1_m2") == pytest.approx(standalone)
    assert alt.mean("block_encrypt.tdes_m1_m2") == pytest.approx(3 * 0.00575 + 24 * prof.mean("ram_write_byte"))
    assert engine_reading(platform("sle78-aes").profile(), "aes128") is None  # no §V.D decomposition there
    charged = {r.bytes: r.predicted_ms for r in predict(plat, ("ccm",), (192,))}
    other = {r.bytes: r.predicted_ms for r in predict(plat, ("ccm",), (192,), profile=alt)}
    assert other[192] < charged[192]


def test_the_study_charges_the_papers_etm_and_shows_the_standards_beside_it():
    """Mayes (2017) §III: "followed by a MAC computation on the cipher text using a different key (K')";
    Figure 3 and Table I (2m) agree. ISO/IEC 19772 mechanism 5 MACs S||C: one block encryption more,
    shown beside, never charged in the paper's columns. CCM charges SP 800-38C (2m+2), the construction
    the paper cites; Table I's 2m+1 is shown beside as one block encryption fewer."""
    import argparse

    from trustlab.experiments.ae import AEExperiment

    plat = platform("multos-sle78")
    paper = {r.bytes: r for r in predict(plat, ("etm",), (16, 192))}
    iso = {r.bytes: r for r in predict(plat, ("etm-iso",), (16, 192))}
    for n, m in ((16, 1), (192, 12)):
        assert paper[n].ops["E"] == 2 * m and iso[n].ops["E"] == 2 * m + 1
        # one more CBC-MAC block: one block encryption and its chaining XOR
        assert iso[n].predicted_ms - paper[n].predicted_ms == pytest.approx(3.3 + 0.73)
    exp = AEExperiment()
    ap = argparse.ArgumentParser()
    exp.add_arguments(ap)
    res = exp.run(ap.parse_args(["--platform", "multos-sle78", "--mode", "ccm,etm", "--bytes", "16"]))
    assert [r["mode"] for r in res.data] == ["ccm", "etm"]  # the standard reading is no extra row
    assert res.data[1]["predicted_ms"] == pytest.approx(paper[16].predicted_ms)
    assert "etm-iso (standard)" in res.text and f"{iso[16].predicted_ms:.4g}" in res.text
    ccm = res.data[0]["predicted_ms"]
    assert "ccm at Table I's 2m+1" in res.text and f"{ccm - 3.3:.4g}" in res.text


def test_papers_etm_rejects_tampered_ciphertext_and_tag_but_not_a_changed_nonce():
    from trustlab.apps.ae import NONCES, InvalidTag, make_mode
    from trustlab.devices.card.primitives import CardCrypto

    ae = make_mode("etm", CardCrypto())
    nonce = NONCES["etm"]
    ct, tag = ae.encrypt(nonce, b"amount=100.00 EUR")
    for bad_ct, bad_tag in ((bytes([ct[0] ^ 1]) + ct[1:], tag), (ct, bytes([tag[0] ^ 1]) + tag[1:])):
        with pytest.raises(InvalidTag):
            ae.decrypt(nonce, bad_ct, bad_tag)
    assert ae.decrypt(bytes([nonce[0] ^ 1]) + nonce[1:], ct, tag) != b"amount=100.00 EUR"


def test_validation_lists_the_etm_and_ccm_readings():
    from trustlab.validation import mayes2017

    found = {i.what: i for i in mayes2017.inconsistencies()}
    etm = found["ETM block encryptions for 192 B (12 blocks)"]
    assert etm.ours == 24.0 and sorted(etm.readings.values()) == [24.0, 25.0]
    ccm = found["CCM block encryptions for 192 B (12 blocks)"]
    assert ccm.ours == 26.0 and sorted(ccm.readings.values()) == [25.0, 26.0]
