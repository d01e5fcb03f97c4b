"""Issue 23: the inputs and faults that still broke the command line, each now one line (or a result).

FIFOs and devices as every input, huge lines, over-long names, huge and non-finite option
values, conflicting and repeated options, files with a byte-order mark.
"""

import os
import signal

import pytest

from trustlab.cli import main

TOML_PROFILE = 'name = "p"\nfamily = "tpm1.2"\n[components.ohc]\nmean = 1.0\n'


@pytest.fixture(autouse=True)
def _guard(tmp_path, monkeypatch):
    """A hang (a FIFO opened for reading) fails the test instead of stalling the suite."""
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)

    def hung(signum, frame):
        raise TimeoutError("the command hung")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def run(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


def one_line_error(capsys, argv, code=2):
    assert run(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trustlab: error: "), err
    return err[0]


# every command that reads a file the user names, with {} for that file
READERS = [
    ["profiles", "show", "{}.toml"],
    ["profiles", "show", "{}.pro"],
    ["profiles", "import", "{}.toml", "--name", "x"],
    ["profiles", "import", "{}.pro", "--name", "x"],
    ["profiles", "import-jcalgtest", "{}.csv"],
    ["profiles", "export", "{}.toml"],
    ["estimate", "--profile", "{}.toml", "TPM_Sign"],
    ["fit", "{}.csv"],
    ["report", "{}.json", "--out", "rep"],
    ["sweep", "{}.toml", "--dry-run"],
    ["run", "counters", "--scheme", "log", "--counters", "2", "--trace", "{}"],
    ["run", "timing-model", "--profile", "{}.toml", "--no-simulate"],
]


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a[:2]))
def test_a_fifo_as_any_input_is_refused_at_once(tmp_path, capsys, argv):
    name = next(a for a in argv if "{}" in a).format("f")
    os.mkfifo(tmp_path / name)
    err = one_line_error(capsys, [a.format("f") for a in argv])
    assert "FIFO (named pipe), not a regular file" in err and name in err


@pytest.mark.parametrize("argv", [a for a in READERS if "--trace" not in a and "show" not in a[1:2]],
                         ids=lambda a: " ".join(a[:2]))
def test_a_device_as_any_input_is_refused(tmp_path, capsys, argv):
    name = next(a for a in argv if "{}" in a).format("z")
    os.symlink("/dev/zero", tmp_path / name)
    assert "character device, not a regular file" in one_line_error(capsys, [a.format("z") for a in argv])


def test_trace_from_dev_zero_and_a_huge_line(tmp_path, capsys):
    base = ["run", "counters", "--scheme", "log", "--counters", "2", "--trace"]
    assert "character device" in one_line_error(capsys, base + ["/dev/zero"])
    (tmp_path / "z").write_bytes(b"\0" * 2_000_000)
    err = one_line_error(capsys, base + ["z"])
    assert "z:1: line longer than the limit" in err and len(err) < 200
    (tmp_path / "t").write_text("increment 1\n" + "x" * 3000 + "\n")
    err = one_line_error(capsys, base + ["t"])
    assert "t:2: expected 'OP COUNTER'" in err and "(3000 characters)" in err and len(err) < 200


def test_over_long_file_names_are_one_line(tmp_path, capsys):
    (tmp_path / "s.toml").write_text('experiment = "timing-model"\n[grid]\nseed = [1]\n')
    long = "x" * 300
    assert "File name too long" in one_line_error(capsys, ["sweep", "s.toml", "--dry-run", "--out", long])
    assert "File name too long" in one_line_error(capsys, ["measure", "--tcti", "swtpm:port=1", "--out", long])
    assert "File name too long" in one_line_error(capsys, ["profiles", "show", long + ".toml"])
    assert "File name too long" in one_line_error(capsys, ["fit", long])


@pytest.mark.parametrize("argv", [
    ["flagship", "--only", "timing-model", "--jobs", "99999999999999999999999"],
    ["sweep", "s.toml", "--jobs", str(2**64)],
    ["report", "r.json", "--jobs", "-3"],
])
def test_huge_jobs_are_refused_before_any_work(tmp_path, capsys, argv):
    assert "--jobs" in one_line_error(capsys, argv)
    assert not (tmp_path / "out").exists()


def test_sweep_whose_results_csv_is_a_directory(tmp_path, capsys):
    (tmp_path / "s.toml").write_text('name = "s"\nexperiment = "lab-counting"\n[grid]\nx = [1]\n')
    assert main(["sweep", "s.toml", "--out", "out", "--jobs", "1", "--no-progress"]) == 0
    (tmp_path / "out/s/results.csv").unlink()
    (tmp_path / "out/s/results.csv").mkdir()
    capsys.readouterr()
    assert "results.csv there is not a regular file" in one_line_error(
        capsys, ["sweep", "s.toml", "--out", "out", "--jobs", "1", "--no-progress"])


@pytest.mark.parametrize("argv, needle", [
    (["run", "pqc-tpm", "--seed", "-1"], "--seed -1: must not be negative"),
    (["run", "pqc-tpm", "--seed", "4294967296"], "must be at most 4294967295"),
    (["run", "pqc-tpm", f"--seed={2**64}"], "must be at most 4294967295"),
    (["fit", "m.csv", "--fix", "ohc=1", "--fix", "ohc=2"], "'ohc' is already held at 1"),
    (["fit", "m.csv", "--fix", "ohc=1", "--fix", "ohc=1"], "give each component once"),
    (["fit", "m.csv", "--family", ""], "--family: empty"),
    (["fit", "m.csv", "--name", " "], "--name: empty"),
    (["profiles", "list", "--family", ""], "--family: empty"),
    (["flagship", "--only", "timing-model", "--skip", "timing-model"], "--only and --skip both name timing-model"),
    (["run", "counters", "--zipf-constant", "nan"], "--zipf-constant 'nan'"),
    (["run", "counters", "--zipf-rho", "inf"], "--zipf-rho 'inf'"),
    (["run", "counters", "--zipf-constant", "0.5"], "--zipf-constant: applies only with --workload zipf"),
    (["run", "counters", "--zipf-mode", "ycsb"], "--zipf-mode: applies only with --workload zipf"),
    (["run", "counters", "--workload", "zipf", "--zipf-rho", "1", "--zipf-mode", "ycsb"],
     "--zipf-rho: applies only with --zipf-mode bounded"),
    (["run", "counters", "--workload", "zipf", "--zipf-rho", "1", "--zipf-constant", "2"], "give one of them"),
    (["run", "counters", "--workload", "zipf", "--zipf-mode", "ycsb", "--zipf-constant", "2"], "in (0, 1)"),
    (["run", "counters", "--trace", "t", "--requests", "5"], "--requests: has no effect with --trace"),
    (["run", "counters", "--read-fraction", "nan"], "--read-fraction 'nan'"),
    (["run", "timing-model", "--noise", "inf"], "--noise 'inf'"),
    (["run", "wallet", "--cheat-rate", "nan"], "--cheat-rate 'nan'"),
    (["run", "hbs", "--sensitivity=-inf"], "--sensitivity '-inf'"),
    (["flagship", "--timeout", "1e400"], "--timeout"),
    (["estimate", "--profile", "atmel-2010", "--in-bytes", str(2**70)], "--in-bytes"),
    (["measure", "--tcti", "swtpm:port=1", "--out", "m.csv", "--repeat", str(2**70)], "--repeat"),
    (["run", "timing-model", "--force"], "--force: applies only with --save"),
    (["run", "hbs", "--sensitivity=--"], "--sensitivity '--'"),  # argparse handed the study [] here
    (["run", "wallet", "--profile=--"], "unknown profile '--'"),
    (["run", "timing-model", "--repeats=--"], "--repeats --"),
])
def test_rules_stated_are_kept(tmp_path, capsys, argv, needle):
    (tmp_path / "m.csv").write_text("ms,ohc\n1,1\n2,2\n")
    (tmp_path / "t").write_text("increment 1\n")
    err = one_line_error(capsys, argv)
    assert needle in err, err


def test_run_save_refuses_to_replace_without_force(tmp_path, capsys):
    argv = ["run", "lab-counting", "--x", "1"]
    (tmp_path / "old.json").write_text("precious")
    os.symlink("old.json", tmp_path / "link.json")
    for name in ("old.json", "link.json"):
        assert "exists; pass --force" in one_line_error(capsys, argv + ["--save", name])
    assert (tmp_path / "old.json").read_text() == "precious" and os.path.islink(tmp_path / "link.json")
    assert main(argv + ["--save", "old.json", "--force"]) == 0
    assert (tmp_path / "old.json").read_text() != "precious"


def test_a_utf8_bom_is_accepted_in_csv_and_toml(tmp_path, capsys):
    bom = b"\xef\xbb\xbf"
    (tmp_path / "m.csv").write_bytes(bom + b"ms,ohc,rsa_sign\n1,1,0\n301,1,1\n2,2,0\n")
    assert main(["fit", "m.csv"]) == 0
    (tmp_path / "p.toml").write_bytes(bom + TOML_PROFILE.encode())
    assert main(["profiles", "show", "p.toml"]) == 0
    (tmp_path / "s.toml").write_bytes(bom + b'experiment = "lab-counting"\n[grid]\nx = [1]\n')
    assert main(["sweep", "s.toml", "--dry-run"]) == 0
    (tmp_path / "t").write_bytes(bom + b"increment 0\nread 1\n")
    assert main(["run", "counters", "--scheme", "log", "--counters", "2", "--trace", "t", "--json"]) == 0


def test_fit_on_values_near_the_double_limit_is_one_clear_error(tmp_path, capfd):
    (tmp_path / "m.csv").write_text("ms,ohc,rsa_sign\n1e308,1,1\n1.5e308,1,0\n1e307,1,1\n")
    assert main(["fit", "m.csv"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "beyond the limit" in err[0], err  # no numpy RuntimeWarnings


def test_empty_tcti_is_one_line_without_tss_noise(capfd):
    assert main(["tpm2", "pqc", "createprimary", "--alg", "ML-DSA-65", "--tcti", ""]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--tcti: empty" in err[0], err


@pytest.mark.parametrize("argv", [
    ["run", "counters", "--scheme", "x"], ["bogus"], ["fit"], ["profiles", "show"],
    ["run", "counters", "--counters"], ["sweep", "--jobs"],
])
def test_usage_errors_are_one_line(capsys, argv):
    err = one_line_error(capsys, argv)
    assert "--help" in err and "usage:" not in err


def test_an_output_that_is_a_fifo_is_refused(tmp_path, capsys):
    (tmp_path / "m.csv").write_text("ms,ohc\n1,1\n2,2\n")
    os.mkfifo(tmp_path / "o.toml")
    assert "not a regular file" in one_line_error(capsys, ["fit", "m.csv", "--out", "o.toml"])


def test_tpm2_pqc_outputs_are_checked_before_the_tpm_is_spoken_to(tmp_path, capsys):
    """Found by the campaign (seed 77): `tpm2 pqc measure --out <5,000 characters>` was a traceback; a FIFO
    as --context-out would have blocked, an input as --signature-out been overwritten."""
    tcti = ["--tcti", "swtpm:port=1"]  # nothing listens: the checks must come first
    (tmp_path / "msg.bin").write_bytes(b"m")
    os.mkfifo(tmp_path / "ctx.fifo")
    assert "File name too long" in one_line_error(capsys, ["tpm2", "pqc", "measure", *tcti, "--out", "9" * 5000])
    assert "not a regular file" in one_line_error(
        capsys, ["tpm2", "pqc", "createprimary", *tcti, "--alg", "ML-DSA-65", "--context-out", "ctx.fifo"])
    assert "is an input of this command" in one_line_error(
        capsys, ["tpm2", "pqc", "sign-digest", *tcti, "--key", "0x81000001", "--message", "msg.bin",
                 "--signature-out", "msg.bin"])
    assert (tmp_path / "msg.bin").read_bytes() == b"m"


def test_pqc_tpm_chip_file_is_read_bounded_and_named_briefly(tmp_path, capsys):
    """Found by the campaign (seed 6151): `run pqc-tpm --chip <5,000 digits>` was an OSError traceback
    (file name too long) whose message quoted all of it; a FIFO as the chip file must not hang."""
    argv = ["run", "pqc-tpm", "--draws", "100", "--profiles", "infineon-slb9672-wolftpm", "--chip"]
    err = one_line_error(capsys, argv + ["9" * 5000])
    assert "neither key=value pairs nor an existing TOML file" in err and len(err) < 400, err
    os.mkfifo(tmp_path / "chip.toml")
    assert "FIFO" in one_line_error(capsys, argv + ["chip.toml"])
