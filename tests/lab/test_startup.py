"""The CLI starts without the heavy libraries: they are imported only where used (issue 15).

A behaviour test (which modules a fresh process has loaded), not a timing test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("numpy", "scipy", "matplotlib")


def _loaded_after(code: str) -> set[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("code", [
    "import trustlab.cli",
    "import trustlab.report, trustlab.report.writer, trustlab.report.plots",
    "from trustlab.cli import build_parser; build_parser()",
    "from trustlab.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "from trustlab.cli import main\nmain(['estimate', '--profile', 'infineon-2010', 'TPM_Seal'])",
    "from trustlab.cli import main\nmain(['profiles', 'list'])",
], ids=["import", "report", "parser", "help", "estimate", "profiles-list"])
def test_cli_start_does_not_import_heavy_libraries(code: str) -> None:
    assert _loaded_after(code) == set()


def test_run_one_experiment_imports_only_what_it_needs() -> None:
    """``trustlab run oracle`` needs neither the fitting (scipy) nor the plotting code."""
    code = "from trustlab.cli import main\nmain(['run', 'oracle', '--parties', '2', '--queries', '1'])"
    assert _loaded_after(code) == set()


def test_run_help_still_lists_every_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    from trustlab.cli import main
    from trustlab.experiments.registry import all_experiments

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in all_experiments())


def test_run_unknown_experiment_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from trustlab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "no-such-study"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def _modules_after(code: str, prefix: str) -> set[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps(sorted(m for m, mod in sys.modules.items() if m.startswith({prefix!r})\n"
             "                         and type(mod).__name__ != '_LazyModule')))")  # lazy_module: not run yet
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _help(argv: list[str]) -> str:
    return f"from trustlab.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"


def test_a_subcommand_imports_only_its_own_cli_module() -> None:
    """Issue 24: ``trustlab sweep --help`` builds the sweep's parser, not every subcommand's."""
    loaded = _modules_after(_help(["sweep", "--help"]), "trustlab.cli.")
    assert {m for m in loaded if not m.startswith("trustlab.cli._")} == {"trustlab.cli.sweep"}  # + shared helpers


def test_top_level_help_imports_no_study_sweep_runner_or_report_writer() -> None:
    loaded = _modules_after(_help(["--help"]), "trustlab.")
    assert not {m for m in loaded if m.startswith(("trustlab.sweep.", "trustlab.report.writer", "trustlab.devices",
                                                   "trustlab.apps", "trustlab.timing.formulas"))}
    assert "tqdm" not in _modules_after(_help(["--help"]), "tqdm")


def test_run_help_lists_every_experiment_without_importing_them() -> None:
    """``run --help`` reads the studies' ``@experiment`` lines: the same names and help as importing them."""
    from trustlab.cli.run import _declared_help
    from trustlab.experiments.registry import all_experiments

    assert _declared_help() == {name: spec.help for name, spec in all_experiments().items()}
    loaded = _modules_after(_help(["run", "--help"]), "trustlab.experiments.")
    assert loaded <= {"trustlab.experiments.registry", "trustlab.experiments._params"}


def test_module_names_match_pkgutil() -> None:
    import pkgutil

    import trustlab.cli
    import trustlab.devices.tpm12.commands
    import trustlab.experiments
    from trustlab.plugins import module_names

    for package in (trustlab.cli, trustlab.experiments, trustlab.devices.tpm12.commands):
        assert module_names(package) == sorted(i.name for i in pkgutil.iter_modules(package.__path__))
