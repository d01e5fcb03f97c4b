"""trustlab replay: the trace it reads, the prices it gives, the post-quantum rewrite, hostile traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trustlab.cli import main
from trustlab.errors import TrustlabError
from trustlab.replay import load, pqc, price, schedule
from trustlab.replay import run as replaying

from . import traces
from .traces import assert_refused_in_one_line, write

WORKLOADS = Path(__file__).resolve().parents[2] / "src" / "trustlab" / "data" / "workloads"


# these lines also carry the optional v2 fields, with a password session (traces.line omits them: no session)
RECORDED = {"hashed_bytes": 0, "rm": [], "sessions": ["password"], "key": None}


def line(**over) -> str:
    return traces.line(**{**RECORDED, **over})


@pytest.mark.parametrize("workload", ["attestation", "seal-unseal", "tls-key", "measured-boot"])
def test_replay_on_the_recording_profile_repeats_serve_draw_for_draw(workload):
    """The shipped traces were recorded on swtpm-native with --seed 0: draw 0 of the replay is what serve charged."""
    trace = load.read(WORKLOADS / f"{workload}.jsonl")
    recorded = sum(c.modelled_ms for c in trace.commands)
    row = replaying.replay(trace, ["swtpm-native"], draws=20, seed=0)["profiles"][0]
    assert row["tpm_seed_draw_ms"] == pytest.approx(recorded, rel=1e-9)
    assert row["tpm_median_ms"] <= row["tpm_p95_ms"]


def test_every_workload_covers_every_tpm2_profile():
    from trustlab.timing import registry

    names = registry.names("tpm2")
    trace = load.read(WORKLOADS / "attestation.jsonl")
    rows = replaying.replay(trace, replaying.select_profiles("all"), draws=5)["profiles"]
    assert [r["profile"] for r in rows] == names
    lacking = [r for r in rows if r["profile"].startswith("intel-ptt-11.8")]
    assert lacking and all(any(n["note"].startswith("cannot price") for n in r["cannot_price"]) for r in lacking)


def test_the_rsa_sign_and_the_ecc_sign_are_priced_by_their_key(tmp_path):
    from trustlab.timing import registry

    prof = registry.load("infineon-slb9670-wolftpm")
    t = load.read(write(tmp_path, line(variant="rsa2048", out_bytes=281), line(seq=2)))
    ms = price.price(price.TermMatrix.build(t.commands), prof, draws=1).per_command_ms
    assert ms[0] == pytest.approx(prof.mean("ohc") + 73 * prof.mean("ohir") + 281 * prof.mean("ohor")
                                  + prof.mean("rsa2048_sign"))
    assert ms[1] == pytest.approx(prof.mean("ohc") + 73 * prof.mean("ohir") + 91 * prof.mean("ohor")
                                  + prof.mean("ecc256_sign"))


def test_concurrent_clients_queue_on_one_chip(tmp_path):
    # two clients, each one 10 ms command arriving at t=0: the second waits for the first
    t = load.read(write(tmp_path, line(client=1), line(seq=2, client=2)))
    pred, gap = schedule.gaps(t.commands)
    assert schedule.wall_ms(pred, gap, np.array([10.0, 10.0])) == pytest.approx(20.0)
    # one client with 5 ms of its own time between two commands
    t = load.read(write(tmp_path, line(served_ms=1.0), line(seq=2, t_ms=6.0), name="u.jsonl"))
    pred, gap = schedule.gaps(t.commands)
    assert gap == [0.0, 5.0]
    assert schedule.wall_ms(pred, gap, np.array([10.0, 10.0])) == pytest.approx(25.0)


# ---- post-quantum rewrite: the same prices as `trustlab run pqc-tpm` ----------------------------------------

PROFILE = "infineon-slb9670-wolftpm"


@pytest.fixture(scope="module")
def pqc_rows():
    from trustlab.experiments.registry import all_experiments  # noqa: F401 (registers them)
    import argparse

    from trustlab.experiments.pqc_tpm import PqcTpmExperiment

    exp = PqcTpmExperiment()
    parser = argparse.ArgumentParser()
    exp.add_arguments(parser)
    args = parser.parse_args(["--profiles", PROFILE, "--algorithms", "ML-DSA-65,ML-KEM-768", "--draws", "10"])
    return {(r["algorithm"], r["operation"]): r for r in exp.run(args).data["rows"]}


@pytest.mark.parametrize("record, algorithm, operation", [
    (dict(command="TPM2_Sign", variant="ecc256", in_bytes=73, out_bytes=91), "ML-DSA-65", "sign"),
    (dict(command="TPM2_Create", variant="ecc256", in_bytes=65, out_bytes=460,
          key={"alg": "ecc256", "sign": True, "decrypt": False, "restricted": False}), "ML-DSA-65", "keygen"),
    (dict(command="TPM2_Load", variant="ecc256", in_bytes=245, out_bytes=59,
          key={"alg": "ecc256", "sign": True, "decrypt": False, "restricted": False}), "ML-DSA-65", "load"),
    (dict(command="TPM2_ECDH_ZGen", variant="ecc256", in_bytes=97, out_bytes=89), "ML-KEM-768", "decapsulate"),
    (dict(command="TPM2_RSA_Encrypt", variant="rsa2048", in_bytes=54, out_bytes=268), "ML-KEM-768", "encapsulate"),
])
def test_rewritten_commands_cost_what_pqc_tpm_says(tmp_path, pqc_rows, record, algorithm, operation):
    (c,) = load.read(write(tmp_path, line(**record))).commands
    r = pqc.rewrite(c, pqc.parse_choice("sign=ML-DSA-65,kem=ML-KEM-768"))
    assert (r.algorithm, r.operation) == (algorithm, operation)
    got = pqc.price(r, PROFILE)
    want = pqc_rows[(algorithm, operation)]
    assert (got.median_ms, got.low_ms, got.high_ms) == pytest.approx(
        (want["median_ms"], want["low_ms"], want["high_ms"]), rel=1e-12)
    assert got.fits == want["fits_buffer"]


def test_storage_keys_sealed_objects_and_failed_commands_stay_classical(tmp_path):
    choice = pqc.parse_choice("sign=ML-DSA-44,kem=ML-KEM-1024")
    t = load.read(write(tmp_path,
                        line(command="TPM2_CreatePrimary", key={"alg": "rsa2048", "sign": False, "decrypt": True,
                                                               "restricted": True}),
                        line(seq=2, command="TPM2_Create", variant="keyedhash",
                             key={"alg": "keyedhash", "sign": False, "decrypt": False, "restricted": False}),
                        line(seq=3, rc=0x9A2)))
    assert [pqc.rewrite(c, choice) for c in t.commands] == [None, None, None]


@pytest.mark.parametrize("text, message", [
    ("sign=ML-KEM-768", "not one of"), ("kem=ML-DSA-65", "not one of"), ("foo=1", "is not sign="),
    ("sign=ML-DSA-65,sign=ML-DSA-44", "given twice"), ("", "give sign="),
])
def test_bad_pqc_choice_is_one_line(text, message):
    with pytest.raises(TrustlabError, match=message):
        pqc.parse_choice(text)


def test_pqc_replay_of_a_workload_has_interval_and_buffer_check():
    trace = load.read(WORKLOADS / "measured-boot.jsonl")
    res = replaying.replay(trace, [PROFILE], draws=5, choice=pqc.parse_choice("sign=ML-DSA-87"))
    q = res["profiles"][0]["pqc"]
    assert q["low_ms"] <= q["median_ms"] <= q["high_ms"]
    assert q["median_ms"] > res["profiles"][0]["tpm_median_ms"]
    assert "TPM2_Quote (ML-DSA-87)" in q["not_fitting"]  # a 4627-byte signature in the response


# ---- hostile traces: a one-line error or a "cannot price" row, never a traceback ---------------------------

@pytest.mark.parametrize("content, message", [
    ('{"v": 2, "seq": 1, "command": "TPM2_Si', "not a JSON line"),
    (json.dumps({"seq": 1, "command": "TPM2_Sign"}), "no format version"),
    (line(v=3), "version 3 is not supported"),
    (line(v="2"), "is not supported"),
    (line(in_bytes=-1), "in_bytes"),
    (line(in_bytes=1 << 40), "in_bytes"),
    (line(t_ms=float("nan")).replace("NaN", "1e999"), "t_ms"),
    (line(command=""), "command"),
    (line(rm=[["TPM2_ContextLoad", 1, 2]]), "'rm'"),
    (line(rm=[["TPM2_ContextLoad", 1, 2, 0]] * 100), "'rm'"),
    (line(key={"alg": "ecc256"}), "'key'"),
    ("[1, 2, 3]", "JSON object"),
    ("[" * 100000, "not a JSON line"),
    ("", "no commands"),
])
def test_hostile_trace_is_a_one_line_error(tmp_path, capsys, content, message):
    assert_refused_in_one_line(write(tmp_path, content), message, capsys)


def test_huge_trace_and_huge_line_are_refused(tmp_path):
    p = write(tmp_path, *[line(seq=i) for i in range(1, 200)])
    with pytest.raises(TrustlabError, match="larger than the limit"):
        load.read(p, max_bytes=10_000)
    with pytest.raises(TrustlabError, match="more than 50 commands"):
        load.read(p, max_commands=50)
    p = write(tmp_path, line(command="x" * 2_000_000), name="long.jsonl")
    with pytest.raises(TrustlabError, match="longer than the limit"):
        load.read(p)


def test_unknown_codes_are_cannot_price_rows(tmp_path, capsys):
    p = write(tmp_path, line(command="TPM2_CC_0x2ff", variant=None), line(seq=2))
    assert main(["replay", str(p), "--profiles", "swtpm-native", "--draws", "3", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["profiles"][0]
    assert row["cannot_price"] == [{"command": "TPM2_CC_0x2ff", "variant": None, "count": 1,
                                    "note": "overhead only (no model for this command)"}]


def test_appended_recordings_are_segments(tmp_path):
    t = load.read(write(tmp_path, line(), line(seq=2), line(seq=1), line(seq=2)))
    assert [c.segment for c in t.commands] == [0, 0, 1, 1]


@pytest.mark.parametrize("argv, message", [
    (["--profiles", "infineon-2010"], "tpm1.2 profile"), (["--profiles", "nope"], "unknown profile"),
    (["--profiles", "tpm1.2"], "not tpm2"), (["--draws", "0"], "--draws"), (["--pqc", "sign=RSA"], "--pqc"),
])
def test_bad_arguments_are_one_line(tmp_path, capsys, argv, message):
    p = write(tmp_path, line())
    assert main(["replay", str(p), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_text_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "w.png"
    assert main(["replay", str(WORKLOADS / "tls-key.jsonl"), "--profiles", f"{PROFILE},swtpm-native",
                 "--draws", "10", "--pqc", "sign=ML-DSA-65", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "TPM time per chip" in out and "Post-quantum what-if" in out and "SignDigest" in out
    assert plot.stat().st_size > 1000


def test_replay_help_does_not_import_heavy_libraries():
    import subprocess
    import sys

    src = Path(__file__).resolve().parents[2] / "src"
    code = ("import sys\nfrom trustlab.cli import main\ntry:\n    main(['replay', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in ('numpy', 'scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_workloads_experiment_runs_on_two_profiles(capsys):
    assert main(["run", "workloads", "--profiles", f"{PROFILE},swtpm-native", "--draws", "10",
                 "--workloads", "measured-boot,tls-key"]) == 0
    out = capsys.readouterr().out
    assert "Workloads x chips" in out and "measured-boot PQC" in out


@pytest.mark.swtpm
def test_a_live_serve_trace_replays_to_what_serve_charged(tmp_path):
    """tpm2-pytss through serve (virtual, a chip with spreads and per-byte costs, --seed 7): the trace has all
    replay needs - replaying it on the same profile with the same seed gives serve's own total."""
    import shutil

    if shutil.which("swtpm") is None:
        pytest.skip("swtpm not installed")
    from tpm2_pytss import ESAPI, TCTILdr, TPM2B_DIGEST, TPM2B_PUBLIC, TPMT_SIG_SCHEME, TPMT_TK_HASHCHECK
    from tpm2_pytss.constants import TPM2_ALG, TPM2_RH, TPM2_ST

    from trustlab.serving.proxy import timed_swtpm

    trace = tmp_path / "live.jsonl"
    with timed_swtpm(PROFILE, virtual=True, trace=str(trace), seed=7) as proxy:
        with ESAPI(TCTILdr("swtpm", proxy.tcti_conf)) as esys:
            parent, *_ = esys.create_primary(None, "rsa2048")
            template = TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256", objectAttributes="userwithauth|sign|fixedtpm|"
                                          "fixedparent|sensitivedataorigin")
            priv, pub, *_ = esys.create(parent, None, template)
            key = esys.load(parent, priv, pub)
            scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA)
            scheme.details.any.hashAlg = TPM2_ALG.SHA256
            for _ in range(3):
                esys.sign(key, TPM2B_DIGEST(b"\x01" * 32), scheme,
                          TPMT_TK_HASHCHECK(tag=TPM2_ST.HASHCHECK, hierarchy=TPM2_RH.NULL))
        charged = proxy.clock.now_ms
    t = load.read(trace)
    assert [c.variant for c in t.commands if c.command == "TPM2_Sign"] == ["ecc256"] * 3
    create = next(c for c in t.commands if c.command == "TPM2_Create")
    assert create.key == {"alg": "ecc256", "sign": True, "decrypt": False, "restricted": False}
    row = replaying.replay(t, [PROFILE], draws=3, seed=7)["profiles"][0]
    assert row["tpm_seed_draw_ms"] == pytest.approx(charged, rel=1e-9)
