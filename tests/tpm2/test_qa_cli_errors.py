"""QA regressions: bad ``measure``/``serve`` input fails at once, as one line, exit 2."""

from __future__ import annotations

import os

import pytest

from trustlab.cli import main
from trustlab.errors import TrustlabError

from .conftest import needs_swtpm


def _one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("trustlab: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err
    return err


def test_measure_out_directory_rejected_before_measuring(tmp_path, capsys):
    # swtpm:port=1 has no TPM behind it: reaching the measurement would fail
    # with a different (TCTI) error, so this proves the check comes first.
    assert main(["measure", "--tcti", "swtpm:port=1", "--repeat", "1", "--out", str(tmp_path)]) == 2
    _one_line_error(capsys, "--out", "is a directory")


def test_measure_out_parent_missing_or_unwritable(tmp_path, capsys):
    assert main(["measure", "--tcti", "swtpm:port=1", "--out", str(tmp_path / "no" / "x.csv")]) == 2
    _one_line_error(capsys, "--out", "does not exist")
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert main(["measure", "--tcti", "swtpm:port=1", "--out", str(ro / "x.csv")]) == 2
        _one_line_error(capsys, "--out", "not writable")
    finally:
        ro.chmod(0o700)


def test_measure_repeat_zero_rejected(tmp_path, capsys):
    assert main(["measure", "--tcti", "swtpm:port=1", "--repeat", "0", "--out", str(tmp_path / "x.csv")]) == 2
    _one_line_error(capsys, "--repeat 0")


def test_serve_dead_backend_fails_before_the_banner(capsys):
    assert main(["serve", "--profile", "nuvoton-npct750-wolftpm", "--port", "0", "--virtual",
                 "--backend", "tcp:127.0.0.1:1"]) == 2
    captured = capsys.readouterr()
    assert "TPM2TOOLS_TCTI" not in captured.out and "trustlab serve:" not in captured.out
    err = captured.err
    assert err.startswith("trustlab: error: backend tcp:127.0.0.1:1: not answering") and err.count("\n") == 1, err
    assert "cannot connect" in err and "Traceback" not in err


@needs_swtpm
def test_backend_failure_while_serving_is_logged_once(swtpm, zero_profile):
    from trustlab.devices.tpm2 import wire
    from trustlab.serving.tpm2.backend import SocketBackend
    from trustlab.serving.proxy import TimingProxy

    lines: list[str] = []
    backend = SocketBackend((swtpm.host, swtpm.port), (swtpm.host, swtpm.port + 1))
    with TimingProxy(zero_profile, backend, virtual=True, log=lines.append) as proxy:
        proxy.check_backend()
        get_random = wire.build_command(0x17B, b"\x00\x08")
        assert wire.response_code(proxy.execute(get_random)) in (0, 0x100)
        assert lines == []
        swtpm.stop()
        for _ in range(3):
            assert wire.response_code(proxy.execute(get_random)) == 0x101
        assert len(lines) == 1 and "TPM2_GetRandom" in lines[0] and f"tcp:{swtpm.host}" in lines[0]
        with pytest.raises(TrustlabError, match="not answering"):
            proxy.check_backend()


@pytest.mark.parametrize("argv, needle", [
    (["--profile", "nuvoton-npct750-wolftpm", "--abandoned-sessions", "17"], "expected 0..16, not 17"),
    (["--profile", "nuvoton-npct750-wolftpm", "--abandoned-sessions", "-1"], "expected 0..16, not -1"),
    (["--profile", "nuvoton-npct750-wolftpm", "--abandoned-sessions", "four"], "expected a whole number"),
    (["--profile", "nuvoton-npct750-wolftpm", "--no-rm", "--abandoned-sessions", "0"], "not to --no-rm"),
    (["--profile", "infineon-2010", "--abandoned-sessions", "0"], "not to a tpm1.2 profile"),
    (["--profile", "infineon-2010", "--no-rm"], "a tpm1.2 profile is served without one"),  # D7: refused alike
])
def test_serve_abandoned_sessions_out_of_place_is_one_line(argv, needle, capsys):
    try:
        code = main(["serve", "--port", "0", "--virtual", *argv])
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    assert code == 2
    _one_line_error(capsys, "--abandoned-sessions" if "--no-rm" not in argv else "--no-rm", needle)


@pytest.mark.parametrize("verb", ["sign-digest", "verify-digest"])
@pytest.mark.parametrize("context", ["x" * 256, "é" * 128])
def test_context_over_255_bytes_is_refused_when_parsed(verb, context, tmp_path, capsys):
    """FIPS 204: ctx is at most 255 bytes (its length is one byte of M'); 128 'é' are 256 UTF-8 bytes.
    swtpm:port=1 has no TPM behind it: the refusal comes before any connection, and names --context."""
    argv = ["tpm2", "pqc", verb, "--tcti", "swtpm:port=1", "--key", "0x80000000",
            "--message", str(tmp_path / "m"), "--context", context]
    argv += ["--signature-out", str(tmp_path / "s")] if verb == "sign-digest" else ["--signature", str(tmp_path / "s")]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--context" in err and "256 bytes" in err and "at most 255 bytes" in err, err


@pytest.mark.parametrize("argv, named, not_named", [
    (["--qualifying", "zz"], "--qualifying 'zz': not hex", "--pcrs"),
    (["--pcrs", "0,x,7"], "--pcrs '0,x,7': 'x' is not a PCR index", "--qualifying"),
    (["--pcrs", "0,24"], "--pcrs '0,24': PCR 24 out of range 0..23", "--qualifying"),
    (["--pcrs", "0,,7"], "--pcrs '0,,7': an empty item", "--qualifying"),
])
def test_quote_names_only_the_wrong_argument(argv, named, not_named, capsys):
    assert main(["tpm2", "pqc", "quote", "--tcti", "swtpm:port=1", "--key", "0x81000000", *argv]) == 2
    err = _one_line_error(capsys, named)
    assert not_named not in err


@needs_swtpm
@pytest.mark.parametrize("verb", [["createprimary", "--alg", "ML-DSA-65"], ["encapsulate", "--key", "0x80000000"]])
def test_a_tpm_without_the_pqc_commands_is_named_as_such(verb, swtpm, capsys):
    """A plain swtpm (no 1.85 commands) answers TPM_RC_TYPE / TPM_RC_COMMAND_CODE; its GetCapability says why."""
    assert main(["tpm2", "pqc", *verb, "--tcti", swtpm.tcti]) == 2
    _one_line_error(capsys, "does not implement the TPM 2.0 Library 1.85 post-quantum commands")
