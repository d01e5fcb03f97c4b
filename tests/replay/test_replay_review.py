"""Regression tests for what a review of `trustlab replay` found (profile files, hostile traces, wall time,
the JSON a script reads, the PQC prices against `run pqc-tpm --json` and `estimate --json`, help)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from trustlab.cli import main
from trustlab.replay import load, schedule, text
from trustlab.replay import run as replaying

from .traces import assert_refused_in_one_line, line, write

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "src" / "trustlab" / "data" / "workloads"
PROFILE = "infineon-slb9670-wolftpm"


def replay_json(capsys, *argv: str) -> dict:
    assert main(["replay", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---- --profiles takes .toml profile files -------------------------------------------------------------------

def test_a_toml_profile_file_prices_as_its_shipped_name(tmp_path, capsys):
    from trustlab.timing import registry

    copy = tmp_path / "my-chip.toml"
    shutil.copy(registry.available()[PROFILE], copy)
    trace = str(WORKLOADS / "tls-key.jsonl")
    res = replay_json(capsys, trace, "--profiles", f"{copy},{PROFILE}", "--draws", "5",
                      "--pqc", "sign=ML-DSA-65")
    by_file, by_name = res["profiles"]
    assert by_file["profile"] == str(copy)
    for key in ("tpm_median_ms", "tpm_p95_ms", "wall_ms", "bus_share"):
        assert by_file[key] == by_name[key]
    # the post-quantum chip is found by the profile's name, not the path (a path would fall to the default chip)
    assert by_file["pqc"]["median_ms"] == by_name["pqc"]["median_ms"]
    assert by_file["pqc"]["max_command_size"] == by_name["pqc"]["max_command_size"]


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.toml", "no such profile file"),
    (lambda d: (os.mkfifo(d / "fifo.toml"), d / "fifo.toml")[1], "FIFO"),
    (lambda d: ((d / "deep.toml").write_text("a = " + "[" * 200 + "]" * 200 + "\n"), d / "deep.toml")[1],
     "nested"),
    (lambda d: ROOT / "src" / "trustlab" / "timing" / "profiles" / "infineon-2010.toml", "tpm1.2 profile"),
])
def test_a_bad_profile_file_is_a_one_line_error(tmp_path, capsys, make, message):
    path = make(tmp_path)
    assert main(["replay", str(WORKLOADS / "tls-key.jsonl"), "--profiles", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


# ---- hostile traces -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, message", [
    ('{"v": 2, "seq": ' + "9" * 5000 + "}", "a number is too long"),
    (line(served_ms=-5.0), "served_ms"),
    (line(modelled_ms=-1.0), "modelled_ms"),
    (line(t_ms=1e14), "t_ms"),
    (line(seq=5) + "\n" + line(seq=3), "seq 3 after seq 5"),
    (line(client="a"), "'client'"),
    ("\ufeff" + line(v=1), "version 1 is not supported"),
])
def test_more_hostile_traces_are_one_line_errors(tmp_path, capsys, content, message):
    assert_refused_in_one_line(write(tmp_path, content), message, capsys)


def test_a_command_that_arrived_before_the_first_written_one_is_accepted(tmp_path):
    # concurrent clients: the command served second may have arrived a little earlier
    t = load.read(write(tmp_path, line(client=1), line(seq=2, client=2, t_ms=-0.2)))
    assert [c.t_ms for c in t.commands] == [0.0, -0.2]


def test_an_appended_recording_restarts_at_one(tmp_path):
    t = load.read(write(tmp_path, line(), line(seq=2), line(seq=1), line(seq=3)))
    assert [c.segment for c in t.commands] == [0, 0, 1, 1]


# ---- wall time: the resource manager's late flushes are not client time ---------------------------------------

def test_a_late_flush_on_close_does_not_lengthen_the_wall(tmp_path):
    # client 1 ends at 2 ms; the resource manager notices its exit at 500 ms (a later tpm2-tools process)
    t = load.read(write(tmp_path, line(client=1, served_ms=2.0), line(seq=2, client=2, t_ms=10.0),
                        line(seq=3, command="RM_FlushOnClose", variant=None, in_bytes=0, out_bytes=0, client=1,
                             t_ms=500.0, served_ms=0.0),
                        line(seq=4, client=3, t_ms=505.0)))
    pred, gap = schedule.gaps(t.commands)
    assert gap[2] == 0.0 and pred[2] == 0      # right after its client's last command
    assert pred[3] == 1                        # the next process follows the last real command ...
    assert gap[3] == pytest.approx(505.0 - 11.0)
    # ... so the wall is the clients' time plus the chip's, not stretched to the flush
    assert schedule.wall_ms(pred, gap, np.array([2.0, 1.0, 0.0, 1.0])) == pytest.approx(2 + 8 + 1 + 494 + 1)


# ---- what a script reads: --json ------------------------------------------------------------------------------

def test_json_rows_have_the_same_keys_and_numbers_not_strings(capsys):
    res = replay_json(capsys, str(WORKLOADS / "seal-unseal.jsonl"), "--profiles", "all", "--draws", "3",
                      "--pqc", "sign=ML-DSA-65,kem=ML-KEM-768")
    rows = res["profiles"]
    assert len({tuple(r) for r in rows}) == 1 and len({tuple(r["pqc"]) for r in rows}) == 1
    for r in rows:
        for key in ("tpm_median_ms", "tpm_p95_ms", "tpm_mean_ms", "tpm_seed_draw_ms", "wall_ms"):
            assert type(r[key]) is float
        assert r["bus_share"] is None or type(r["bus_share"]) is float
        assert all(type(t["ms"]) is float and type(t["count"]) is int for t in r["top"])
        q = r["pqc"]
        assert all(type(q[k]) is float for k in ("median_ms", "low_ms", "high_ms", "classical_median_ms"))
        assert type(q["max_command_size"]) is int
    assert type(res["commands"]) is int and type(res["client_ms"]) is float


# ---- the per-command prices equal `estimate --json` and `run pqc-tpm --json` ---------------------------------

@pytest.mark.parametrize("command, key, n_in, n_out, estimate_key", [
    ("TPM2_Sign", "ecc256", 201, 155, "ecc256"),
    ("TPM2_Sign", "rsa2048", 201, 345, "rsa2048"),
    ("TPM2_CreatePrimary", "rsa2048", 131, 570, "rsa2048"),
    ("TPM2_VerifySignature", "ecc256", 120, 82, "ecc256"),
    ("TPM2_StartAuthSession", "rsa2048", 319, 48, "rsa2048-salted"),
    ("TPM2_ContextLoad", None, 1268, 14, None),
])
def test_a_replayed_command_costs_what_estimate_says(tmp_path, capsys, command, key, n_in, n_out, estimate_key):
    p = write(tmp_path, line(command=command, variant=key, in_bytes=n_in, out_bytes=n_out))
    profile = "nuvoton-npct75x-7.2.0.1-jcalgtest"
    res = replay_json(capsys, str(p), "--profiles", profile, "--draws", "1")
    argv = ["estimate", "--profile", profile, command, "--in-bytes", str(n_in), "--out-bytes", str(n_out), "--json"]
    assert main(argv + (["--key", estimate_key] if estimate_key else [])) == 0
    (est,) = json.loads(capsys.readouterr().out)
    assert res["profiles"][0]["tpm_mean_ms"] == pytest.approx(est["ms"], rel=1e-12)


def test_pqc_replay_prices_are_run_pqc_tpms_plus_the_recorded_extra_bytes(tmp_path, capsys):
    """The CLI's own numbers, both sides: each rewritten command's price is `run pqc-tpm --json`'s median/low/high
    for the same profile, algorithm and operation, plus the bus time of the bytes the recorded frame has beyond
    the model's standard frame (zero for a standard frame)."""
    from trustlab.replay import pqc

    key = {"alg": "ecc256", "sign": True, "decrypt": False, "restricted": False}
    p = write(tmp_path, line(), line(seq=2, in_bytes=201, out_bytes=155),
              line(seq=3, command="TPM2_Create", in_bytes=127, out_bytes=522, key=key),
              line(seq=4, command="TPM2_ECDH_ZGen", in_bytes=97, out_bytes=89))
    res = replay_json(capsys, str(p), "--profiles", PROFILE, "--draws", "2", "--pqc", "sign=ML-DSA-65,kem=ML-KEM-768")
    assert main(["run", "pqc-tpm", "--profiles", PROFILE, "--algorithms", "ML-DSA-65,ML-KEM-768", "--draws", "10",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = {(r["algorithm"], r["operation"]): r for r in out["rows"]}
    per_byte = pqc.bus_ms_per_byte(PROFILE)
    trace = load.read(p)
    seen = set()
    for g in res["profiles"][0]["pqc"]["rewritten"]:
        w = want[(g["algorithm"], g["operation"])]
        c = next(c for c in trace.commands if (c.command, c.variant) == (g["command"], g["variant"])
                 and pqc.rewrite(c, pqc.parse_choice("sign=ML-DSA-65,kem=ML-KEM-768")).in_bytes == g["in_bytes"])
        r = pqc.rewrite(c, pqc.parse_choice("sign=ML-DSA-65,kem=ML-KEM-768"))
        extra = r.delta_bytes * per_byte
        for k in ("median_ms", "low_ms", "high_ms"):
            assert g[k] == pytest.approx(w[k] + extra, rel=1e-12)
        assert g["fits"] == w["fits_buffer"] or r.delta_bytes != 0
        seen.add((g["operation"], r.delta_bytes == 0))
    assert ("sign", True) in seen and ("sign", False) in seen and {"keygen", "decapsulate"} <= {s[0] for s in seen}


# ---- the plot and --help --------------------------------------------------------------------------------------

def test_plot_marks_profiles_that_give_a_lower_bound():
    trace = load.read(WORKLOADS / "attestation.jsonl")
    res = replaying.replay(trace, ["intel-ptt-11.8.50.3399-jcalgtest", "swtpm-native"], draws=2)
    spec = text.plot(res)
    # full profile names, as --profiles takes them (s8 evaluator: shortened names were refused)
    assert spec["series"][0]["x"] == ["intel-ptt-11.8.50.3399-jcalgtest *", "swtpm-native"]
    assert "lower bound" in spec["title"]


def test_replay_help_gives_an_example_of_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    out = capsys.readouterr().out
    examples = out.split("examples:", 1)[1]
    for option in ("--profiles", "--draws", "--seed", "--pqc", "--top", "--plot", "--json", ".toml"):
        assert option in examples, option


# ---- --plot never harms an input ------------------------------------------------------------------------------

@pytest.mark.parametrize("target, message", [
    ("trace", "is an input of this command"), ("profile", "is an input of this command"),
    ("dir", "is a directory"), ("missing", "does not exist"),
])
def test_plot_refuses_an_input_a_directory_or_a_missing_directory(tmp_path, capsys, target, message):
    from trustlab.timing import registry

    trace = write(tmp_path, line())
    before = trace.read_bytes()
    profile = tmp_path / "chip.toml"
    shutil.copy(registry.available()["swtpm-native"], profile)
    plot = {"trace": trace, "profile": profile, "dir": tmp_path, "missing": tmp_path / "no" / "w.png"}[target]
    assert main(["replay", str(trace), "--profiles", f"swtpm-native,{profile}", "--plot", str(plot)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert trace.read_bytes() == before and not (tmp_path / "no").exists()


def test_plot_is_written_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    from trustlab.report import plots

    trace = write(tmp_path, line())
    plot = tmp_path / "w.png"
    plot.write_bytes(b"old")

    def broken(spec, out, dpi=100):  # out: the open temp file replay writes through
        out.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plots, "render", broken)
    assert main(["replay", str(trace), "--profiles", "swtpm-native", "--plot", str(plot), "--force"]) == 2
    assert "No space left" in capsys.readouterr().err
    assert plot.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl", "w.png"]


def test_wall_at_draw_zero_is_what_a_seeded_realtime_run_takes(tmp_path):
    """Back-to-back commands of one client: the wall at draw 0's prices is the seed draw's total (+ its gap)."""
    key = {"alg": "rsa2048", "sign": False, "decrypt": True, "restricted": True}
    t = load.read(write(tmp_path, *[line(seq=i, command="TPM2_CreatePrimary", variant="rsa2048", in_bytes=131,
                                         out_bytes=570, key=key, t_ms=10.0 * i, served_ms=1.0)
                                    for i in range(1, 4)]))
    row = replaying.replay(t, [PROFILE], draws=5, seed=3)["profiles"][0]
    assert row["tpm_seed_draw_ms"] != pytest.approx(row["tpm_mean_ms"])   # key generation has a spread
    assert row["wall_seed_draw_ms"] == pytest.approx(row["tpm_seed_draw_ms"] + 2 * 9.0)
    assert row["wall_ms"] == pytest.approx(row["tpm_mean_ms"] + 2 * 9.0)


def test_bus_share_is_never_above_one_and_says_when_the_profile_prices_bytes_low(tmp_path, capsys):
    # SLB 9673: I2C at 400 kHz, and a profile with no per-byte cost: 417 bytes take longer than the whole price
    p = write(tmp_path, line(command="TPM2_GetCapability", variant=None, in_bytes=22, out_bytes=395))
    res = replay_json(capsys, str(p), "--profiles", "infineon-slb9673-wolftpm,infineon-slb9672-wolftpm",
                      "--draws", "2", "--pqc", "sign=ML-DSA-65")
    i2c, spi = res["profiles"]
    assert i2c["bus_ms"] > i2c["tpm_mean_ms"] and i2c["bus_exceeds_priced"] and i2c["bus_share"] == 1.0
    assert i2c["pqc"]["bus_share"] <= 1.0
    assert not spi["bus_exceeds_priced"] and 0 < spi["bus_share"] < 1
    assert spi["bus_share"] == pytest.approx(spi["bus_ms"] / spi["tpm_mean_ms"])
    assert main(["replay", str(p), "--profiles", "infineon-slb9673-wolftpm", "--draws", "2"]) == 0
    assert "exceeds the whole priced TPM time on infineon-slb9673" in capsys.readouterr().out


def test_a_tpm12_trace_is_refused_not_priced_as_overhead(tmp_path, capsys):
    """serve with a tpm1.2 profile writes the same format; its commands have no TPM 2.0 price."""
    p = write(tmp_path, line(command="TPM_GetRandom", code="0x46", variant=None, in_bytes=14, out_bytes=22))
    assert main(["replay", str(p), "--profiles", "swtpm-native"]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:1: TPM_GetRandom is a TPM 1.2 command" in err and err.count("\n") == 1
