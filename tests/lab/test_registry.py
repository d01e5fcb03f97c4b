"""The experiment registry: parameters from mappings, raising parsers, extra modules."""

from __future__ import annotations

import pytest

from trustlab.errors import TrustlabError
from trustlab.experiments import registry
from trustlab.experiments._params import argv_from_params


def test_argv_from_params_uses_the_experiment_declaration():
    argv = argv_from_params("timing-model", {"profile": ["atmel-2010", "stm-2010"], "noise": 0.01,
                                             "seed": 4, "repeats": None})
    assert argv == ["--profile=atmel-2010", "--profile=stm-2010", "--noise=0.01", "--seed=4"]
    args = registry.parse_args("timing-model", argv)
    assert args.profile == ["atmel-2010", "stm-2010"] and args.noise == 0.01 and args.seed == 4


def test_unknown_parameter_names_known_ones():
    with pytest.raises(TrustlabError, match="no parameter 'nosie'.*noise"):
        argv_from_params("timing-model", {"nosie": 1})


def test_bad_argv_raises_instead_of_exiting():
    with pytest.raises(TrustlabError, match="timing-model.*--seed"):
        registry.parse_args("timing-model", ["--seed", "abc"])
    with pytest.raises(TrustlabError, match="unknown experiment"):
        registry.parse_args("no-such-experiment", [])


def test_flagship_runs_default_and_declared():
    assert registry.flagship_runs(registry.get("timing-model"))[0] == []

    class Bare:
        pass

    assert registry.flagship_runs(Bare()) == [[]]


def test_parser_is_built_once_and_runs_do_not_share_mutable_defaults():
    assert registry.experiment_parser("hbs") is registry.experiment_parser("hbs")
    first = registry.parse_args("hbs", ["--grid", "--grid-h", "10", "20"])
    first.grid_h.append(99)
    first.set.append("x=1")
    second = registry.parse_args("hbs", ["--grid", "--grid-h", "10", "20"])
    assert second.grid_h == [10, 20] and second.set == []


def test_tool_versions_is_a_copy():
    registry.tool_versions()["python"] = "tampered"
    assert registry.tool_versions()["python"] != "tampered"


_WITH_BROKEN_MODULE = """
import sys
import trustlab.experiments as pkg
pkg.__path__.append(sys.argv[1])  # a study module beside the shipped ones that does not import
from trustlab.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("name", ["lab-fragile", "lab-fragile-extra"])
def test_run_of_an_experiment_whose_module_fails_to_import_says_why(tmp_path, name):
    import os
    import subprocess
    import sys

    (tmp_path / "lab_fragile.py").write_text(
        "import no_such_module_for_trustlab_tests\n"
        "from trustlab.experiments.registry import experiment\n\n"
        "@experiment('lab-fragile', help='x')\nclass A: ...\n\n"
        "@experiment(\"lab-fragile-extra\", help='y')\nclass B: ...\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", _WITH_BROKEN_MODULE, str(tmp_path), "run", name],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"trustlab: error: experiment {name} is not available: module trustlab.experiments.lab_fragile failed "
        "to import: ModuleNotFoundError: No module named 'no_such_module_for_trustlab_tests'"]
    # an experiment that is neither registered nor declared by a broken module: argparse's list
    proc = subprocess.run([sys.executable, "-c", _WITH_BROKEN_MODULE, str(tmp_path), "run", "lab-nothing"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "invalid choice: 'lab-nothing'" in proc.stderr
