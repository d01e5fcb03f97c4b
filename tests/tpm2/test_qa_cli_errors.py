"""QA regressions: bad ``measure``/``serve`` input fails at once, as one line, exit 2."""

from __future__ import annotations

import os

import pytest

from trustlab.cli import main


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
