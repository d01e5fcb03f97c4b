"""The oracle study: model column equals the paper's, simulation comes from real runs."""

from __future__ import annotations

import json

import pytest

from trustlab.experiments.registry import parse_args, get
from trustlab.experiments.oracle import PAPER_INFINEON


def _run(*argv: str):
    spec = get("oracle")
    return spec.run(parse_args("oracle", list(argv)))


@pytest.mark.parametrize("n", [2, 3])
def test_infineon_model_matches_the_paper(n: int) -> None:
    result = _run("--profile", "infineon-2010", "--parties", str(n), "--queries", "1")
    data = result.data
    for op in data["operations"]:
        assert round(op["model_ms"]) == PAPER_INFINEON[op["ref"]], op
        # simulated within the documented structure differences (< 0.1 ms on Infineon)
        assert op["simulated_ms"] == pytest.approx(op["model_ms"], abs=0.1)
    # 672 + 508 n from rounded T values: the model agrees within the rounding of its terms
    assert data["source_model_ms"] == pytest.approx(672 + 508 * n, abs=0.5 * (5 + 2 * (n - 1)))
    assert data["destination_model_ms"] == pytest.approx(812, abs=1.0)
    assert data["answers_identical"] is True
    assert data["auth_session_ms"]["source"] > 0 and data["auth_session_ms"]["destination"] > 0
    labels = {r.label for r in result.references}
    assert any("672 + 508n" in label for label in labels)


def test_other_profiles_run_and_have_no_infineon_references() -> None:
    result = _run("--profile", "sim-2010", "--parties", "2", "--queries", "1", "--input-blocks", "2",
                  "--output-blocks", "2")
    assert result.data["answers_identical"]
    assert all("672" not in r.label for r in result.references)


def test_cli_json_and_bad_input(capsys) -> None:
    from trustlab.cli import main

    assert main(["run", "oracle", "--profile", "sim-2010", "--parties", "2", "--queries", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"operations", "source_total_ms", "destination_total_ms", "auth_session_ms", "query_ms"} <= set(data)
    assert main(["run", "oracle", "--parties", "1"]) == 2
    err = capsys.readouterr().err
    assert "parties" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["run", "oracle", "--profile", "no-such-profile"]) == 2
