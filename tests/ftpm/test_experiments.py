"""The two experiments end to end through the CLI, and the measured storage costs."""

import contextlib
import io
import json
import shutil
from dataclasses import dataclass

import pytest

from trustlab.cli import main
from trustlab.experiments.ftpm_vs_dtpm import kind_of


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def run(*argv) -> Done:
    """The CLI in-process (same code path as the console script, without the start-up cost)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    return Done(rc, out.getvalue(), err.getvalue())


def test_ftpm_crash_json_has_exactly_the_issue_keys():
    p = run("run", "ftpm-crash", "--commands", "12", "--seed", "3", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert list(data) == ["crash_points", "recovered_old", "recovered_new", "torn", "lost_committed",
                          "rollbacks_accepted"]
    assert data["crash_points"] == data["recovered_old"] + data["recovered_new"] > 0
    assert data["torn"] == data["lost_committed"] == data["rollbacks_accepted"] == 0


def test_ftpm_crash_is_deterministic_per_seed():
    a = run("run", "ftpm-crash", "--commands", "8", "--seed", "5", "--json").stdout
    b = run("run", "ftpm-crash", "--commands", "8", "--seed", "5", "--json").stdout
    assert a == b


def test_ftpm_crash_dark_period_study(tmp_path):
    out = tmp_path / "r.json"
    p = run("run", "ftpm-crash", "--commands", "2", "--boots", "60", "--p-dark-reboot", "0.2", "--save", str(out))
    assert p.returncode == 0, p.stderr
    assert "dirty-bit" in p.stdout and "tpm2-nonorderly" in p.stdout
    record = json.loads(out.read_text())
    policies = {d["policy"]: d for d in record["data"]["dark_periods"]}
    assert policies["no-storage"]["attacker_guesses"] > policies["dirty-bit"]["attacker_guesses"]
    assert "emmc-rpmb-optee" in record["profiles"]


@pytest.mark.parametrize("argv,needle", [
    (["--commands", "0"], "positive integer"),
    (["--commands", "x"], "positive integer"),
    (["--profile", "no-such-profile"], "unknown profile"),
    (["--p-typo", "2"], "probability"),
])
def test_ftpm_crash_bad_input_is_one_line(argv, needle):
    p = run("run", "ftpm-crash", *argv)
    assert p.returncode != 0 and needle in p.stderr and "Traceback" not in p.stderr


def test_profile_kind_classification():
    assert kind_of("intel-ptt-302.12.0.0-jcalgtest") == "fTPM"
    assert kind_of("nvidia-jetson-orin-op-tee-ftpm-wolftpm") == "fTPM"
    assert kind_of("infineon-slb9670-wolftpm") == "dTPM"
    assert kind_of("ibm-swtpm-8215.1561.22.13878-jcalgtest") == "software"


needs_swtpm = pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")


@needs_swtpm
def test_ftpm_vs_dtpm_measures_storage_on_the_reference_code():
    p = run("run", "ftpm-vs-dtpm", "--reps", "1", "--profiles",
            "intel-ptt-302.12.0.0-jcalgtest,infineon-slb9670-wolftpm", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    by_label = {c["label"]: c for c in data["commands"]}
    # commands that only use keys leave the NV image alone: no RPMB traffic
    for label in ("sign", "verify", "encrypt", "decrypt", "load", "unseal"):
        assert by_label[label]["rpmb_frames"] == 0
    # recording a failed DA authorization and incrementing a counter write state + commit
    assert by_label["unseal, wrong PIN (DA)"]["rpmb_frames"] >= 2
    assert by_label["NV increment"]["rpmb_frames"] >= 2
    kinds = {d["profile"]: d for d in data["devices"]}
    ptt, ifx = kinds["intel-ptt-302.12.0.0-jcalgtest"], kinds["infineon-slb9670-wolftpm"]
    assert ptt["kind"] == "fTPM" and ifx["kind"] == "dTPM"
    wrong = "unseal, wrong PIN (DA)"
    assert ptt["total_ms"][wrong] == pytest.approx(ptt["compute_ms"][wrong] + by_label[wrong]["storage_ms"])
    assert ifx["total_ms"][wrong] == ifx["compute_ms"][wrong]


def test_ftpm_vs_dtpm_rejects_non_tpm2_profile():
    p = run("run", "ftpm-vs-dtpm", "--profiles", "infineon-2010")
    assert p.returncode != 0 and "not tpm2" in p.stderr and "Traceback" not in p.stderr
