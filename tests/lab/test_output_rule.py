"""Issue 23, left open by the first pass: one rule for every file output, and no option silently ignored.

The rule (safe_output.check_outputs): an existing file or symlink is replaced only with --force, and
--force without the output it would apply to is an error. Directory outputs (report, flagship,
sweep --out) follow safe_output.claim_dir's rule, which --force relaxes the same way.
"""

import argparse
import os

import pytest

from trustlab.cli import build_parser, main
from trustlab.safe_output import path_arg



@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def one_line_error(capsys, argv, code=2):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    assert rc == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trustlab: error: "), err
    return err[0]


TCTI = ["--tcti", "swtpm:port=1"]  # nothing listens: every refusal here must come before the TPM
CSV = "ms,ohc,rsa_sign\n1,1,0\n301,1,1\n2,2,0\n"
TOML_PROFILE = 'name = "p"\nfamily = "tpm1.2"\n[components.ohc]\nmean = 1.0\n'

# every file output of every subcommand (serve's --trace and --state are serve's own)
FILE_OUTPUTS = [
    (["fit", "m.csv"], "--out"),
    (["measure", *TCTI], "--out"),
    (["run", "lab-counting", "--x", "1"], "--save"),
    (["tpm2", "pqc", "createprimary", *TCTI, "--alg", "ML-DSA-65"], "--context-out"),
    (["tpm2", "pqc", "createprimary", *TCTI, "--alg", "ML-DSA-65"], "--public-out"),
    (["tpm2", "pqc", "create", *TCTI, "--alg", "ML-DSA-65", "--parent", "0x81000001", "--private-out", "new.priv"],
     "--public-out"),
    (["tpm2", "pqc", "create", *TCTI, "--alg", "ML-DSA-65", "--parent", "0x81000001"], "--private-out"),
    (["tpm2", "pqc", "load", *TCTI, "--parent", "0x81000001", "--private", "m.csv", "--public", "m.csv"],
     "--context-out"),
    (["tpm2", "pqc", "sign-digest", *TCTI, "--key", "0x81000001", "--digest", "00"], "--signature-out"),
    (["tpm2", "pqc", "encapsulate", *TCTI, "--key", "0x81000001"], "--ciphertext-out"),
    (["tpm2", "pqc", "quote", *TCTI, "--key", "0x81000001"], "--attest-out"),
    (["tpm2", "pqc", "quote", *TCTI, "--key", "0x81000001"], "--signature-out"),
    (["tpm2", "pqc", "measure", *TCTI], "--out"),
    (["replay", "m.csv"], "--plot"),
]


@pytest.mark.parametrize("argv, flag", FILE_OUTPUTS, ids=lambda x: x if isinstance(x, str) else " ".join(x[:3]))
def test_every_file_output_refuses_an_existing_file_or_symlink_without_force(tmp_path, capsys, argv, flag):
    (tmp_path / "m.csv").write_text(CSV)
    (tmp_path / "old").write_text("precious")
    os.symlink("nowhere", tmp_path / "dangling")
    for name in ("old", "dangling"):
        err = one_line_error(capsys, argv + [flag, name])
        assert f"{flag} {name}: exists; pass --force" in err, err
    assert (tmp_path / "old").read_text() == "precious" and os.path.islink(tmp_path / "dangling")


@pytest.mark.parametrize("argv, flags", [
    (["fit", "m.csv"], "--out"),
    (["run", "lab-counting", "--x", "1"], "--save"),
    (["tpm2", "pqc", "createprimary", *TCTI, "--alg", "ML-DSA-65"], "--context-out or --public-out"),
    (["tpm2", "pqc", "load", *TCTI, "--parent", "0x81000001", "--private", "m.csv", "--public", "m.csv"],
     "--context-out"),
    (["tpm2", "pqc", "sign-digest", *TCTI, "--key", "0x81000001", "--digest", "00"], "--signature-out"),
    (["tpm2", "pqc", "encapsulate", *TCTI, "--key", "0x81000001"], "--ciphertext-out"),
    (["tpm2", "pqc", "quote", *TCTI, "--key", "0x81000001"], "--signature-out or --attest-out"),
    (["tpm2", "pqc", "measure", *TCTI], "--out"),
    (["replay", "m.csv"], "--plot"),
], ids=lambda x: x if isinstance(x, str) else " ".join(x[:3]))
def test_force_without_its_output_is_an_error(tmp_path, capsys, argv, flags):
    (tmp_path / "m.csv").write_text(CSV)
    err = one_line_error(capsys, argv + ["--force"])
    assert f"--force: applies only with {flags} " in err, err


def test_force_replaces_fit_out(tmp_path, capsys):
    (tmp_path / "m.csv").write_text(CSV)
    (tmp_path / "p.toml").write_text("precious")
    assert main(["fit", "m.csv", "--out", "p.toml", "--force"]) == 0
    assert "[components" in (tmp_path / "p.toml").read_text()


def test_profile_import_refuses_to_replace_your_profile_without_force(tmp_path, capsys):
    (tmp_path / "p.toml").write_text(TOML_PROFILE)
    assert main(["profiles", "import", "p.toml", "--name", "mine"]) == 0
    stored = tmp_path / "home" / "profiles" / "mine.toml"
    before = stored.read_text()
    assert "--name mine: you have a profile of that name" in one_line_error(
        capsys, ["profiles", "import", "p.toml", "--name", "mine"])
    assert stored.read_text() == before
    (tmp_path / "p.toml").write_text(TOML_PROFILE.replace("1.0", "2.0"))
    assert main(["profiles", "import", "p.toml", "--name", "mine", "--force"]) == 0
    assert stored.read_text() != before
    assert "--print stores none" in one_line_error(
        capsys, ["profiles", "import-jcalgtest", "x.csv", "--print", "--force"])


def _leaves(parser, words=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if hasattr(sub, "_populate"):
                    sub._populate([])
                yield from _leaves(sub, words + (name,))
            return
    yield words, parser


def test_every_output_option_has_force():
    """A new output option must come with --force (and so with the rule): the list above stays whole."""
    missing = []
    for words, parser in _leaves(build_parser()):
        if words[:1] == ("serve",):  # serve's own rule (a state directory, a trace it appends to)
            continue
        outputs = [a.option_strings[0] for a in parser._actions if a.type is path_arg and a.option_strings]
        if outputs and not any(a.dest == "force" for a in parser._actions):
            missing.append(f"{' '.join(words)} {outputs}")
    assert not missing, missing


@pytest.mark.parametrize("argv, needle", [
    (["run", "counters", "--scheme", "log-tpm2", "--tpm12", "inproc"], "--tpm12 inproc: applies to the TPM 1.2"),
    (["run", "counters", "--scheme", "hashtree", "--tpm12", "libtpms"], "--tpm12 libtpms: applies to --scheme log"),
    (["run", "counters", "--scheme", "log", "--attest-every", "1"], "--attest-every 1: applies to the hash-tree"),
    (["run", "counters", "--trace", "t", "--workload", "roundrobin"], "--workload roundrobin: has no effect"),
    (["run", "counters", "--op", "increment", "--read-fraction", "0.5"], "--op increment: has no effect"),
    (["run", "ftpm-crash", "--p-unclean", "0.05"], "--p-unclean: applies only with --boots"),
    (["run", "ae", "--protocol", "T=1"], "--protocol T=1: applies only with --link char"),
    (["run", "pqc-tpm", "--algorithms", "ML-KEM-768", "--message-bytes", "16384"],
     "--message-bytes 16384: applies only with an ML-DSA"),
    (["flagship", "--list", "--out", "x"], "--out: has no effect with --list"),
    (["flagship", "--list", "--jobs", "1"], "--jobs: has no effect with --list"),
    (["flagship", "--list", "--timeout", "900"], "--timeout: has no effect with --list"),
    (["flagship", "--list", "--force"], "--force: has no effect with --list"),
    (["run", "hbs", "--grid", "--sensitivity", "0.1"], "--sensitivity: has no effect with --grid"),
    (["fit", "m.csv", "--name", "chip"], "--name 'chip': names the profile written by --out"),
    (["sweep", "s.toml", "--dry-run", "--jobs", "2"], "--jobs: has no effect with --dry-run"),
    (["sweep", "s.toml", "--dry-run", "--no-progress"], "--no-progress: has no effect with --dry-run"),
    (["sweep", "--params", "timing-model", "--out", "x"], "--out: has no effect with --params"),
    (["sweep", "--params", "timing-model", "--jobs", "1"], "--jobs: has no effect with --params"),
])
def test_an_option_without_effect_in_the_mode_is_an_error_even_at_its_default_value(tmp_path, capsys, argv, needle):
    (tmp_path / "t").write_text("increment 1\n")
    (tmp_path / "m.csv").write_text(CSV)
    err = one_line_error(capsys, argv)
    assert needle in err, err


def test_the_defaults_still_apply_when_not_given(capsys):
    assert main(["run", "counters", "--scheme", "both", "--counters", "2", "--deterministic", "--json"]) == 0
    assert main(["run", "ftpm-crash", "--commands", "2", "--boots", "20"]) == 0
    assert "P(typo)=0.1, P(reboot in dark)=0.02, P(unclean)=0.05" in capsys.readouterr().out
    assert main(["run", "ae", "--link", "char", "--protocol", "T=0", "--bytes", "16", "--mode", "gcm",
                 "--platform", "sle78-aes", "--json"]) == 0
    assert main(["flagship", "--list", "--only", "timing-model"]) == 0
    assert main(["sweep", "--params", "timing-model"]) == 0
