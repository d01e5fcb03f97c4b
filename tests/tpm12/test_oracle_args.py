"""QA regressions: ``run oracle`` rejects out-of-range sizes at once, as one line, exit 2."""

from __future__ import annotations

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import get


@pytest.mark.parametrize("argv, flag", [
    (["--queries", "0"], "--queries 0"),
    (["--queries", "-2"], "--queries -2"),
    (["--parties", "1"], "--parties 1"),
    (["--parties", "100000000000000000000"], "--parties 100000000000000000000"),
    (["--input-blocks", "0"], "--input-blocks 0"),
    (["--output-blocks", "-1"], "--output-blocks -1"),
    # inside the old 1..4096 but beyond what TPM_HMAC takes: failed inside the TPM without naming the flag
    (["--input-blocks", "2000"], "--input-blocks 2000"),
    (["--output-blocks", "100"], "--output-blocks 100"),
])
def test_out_of_range_is_one_line_error(argv, flag, capsys) -> None:
    assert main(["run", "oracle", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trustlab: error: {flag}: must be between") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_every_argument_has_help() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    get("oracle").add_arguments(parser)
    for action in parser._actions:
        if action.dest != "help":
            assert action.help, action.dest
