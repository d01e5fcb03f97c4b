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


def test_tool_versions_is_a_copy():
    registry.tool_versions()["python"] = "tampered"
    assert registry.tool_versions()["python"] != "tampered"
