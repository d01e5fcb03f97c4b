"""Property-based bad input for the CLI's file-reading entry points and every experiment's parser.

Each example writes one generated input file into a fresh directory and drives the
real entry point in process (``trustlab.cli.main``). Properties:

* the outcome is success (for ``report``: exit 1 when records hold failed runs), or
  exit status 2 with exactly one line on stderr
  (``trustlab: error: ...``) -- never an exception escaping ``main``;
* no file other than the named output is created, changed or removed
  (the input included).

A few hundred examples per target run in ``make test`` (seconds); set
``TRUSTLAB_FUZZ_EXAMPLES`` for longer runs (``benchmarks/bench_fuzz.py`` does).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trustlab.cli as cli
from trustlab.errors import TrustlabError
from trustlab.experiments.registry import all_experiments, experiment_parser
from trustlab.timing.pro_format import PRO_KEYS

SCALE = float(os.environ.get("TRUSTLAB_FUZZ_EXAMPLES", "1"))


def fuzz(examples: int):
    return settings(max_examples=max(1, int(examples * SCALE)), deadline=None, derandomize=SCALE == 1,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@pytest.fixture(scope="module", autouse=True)
def _one_parser():
    """main() builds the whole parser (every subcommand, every experiment) per call; build it once."""
    real = cli.build_parser
    cli.build_parser = functools.cache(real)
    yield
    cli.build_parser = real


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath, name)
            data = path.read_bytes() if path.is_file() else b"(link)"
            out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def drive(files: dict[str, str | bytes], argv: list[str], outputs: tuple[str, ...] = (),
          results: tuple[int, ...] = (0,)) -> tuple[int, str]:
    """Write ``files`` into a fresh directory, run ``trustlab ARGV`` there, check the properties."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        for name, content in files.items():
            (root / name).write_bytes(content.encode("utf-8", "surrogatepass") if isinstance(content, str)
                                      else content)
        before = _snapshot(root)
        err = io.StringIO()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                try:
                    code = cli.main(argv)
                except SystemExit as exc:  # argparse's own usage errors
                    code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(cwd)
        after = _snapshot(root)
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        foreign = {k for k in changed if not any(k == o or k.startswith(o.rstrip("/") + "/") for o in outputs)}
        assert not foreign, f"files outside the named output changed: {sorted(foreign)}"
        text = err.getvalue()
        if code not in results:
            lines = text.strip().splitlines()
            assert code == 2, (code, text[-2000:])
            assert lines and "Traceback" not in text, text[-2000:]
            if lines[0].startswith("usage:"):  # argparse: usage, then "PROG: error: ..."
                assert ": error: " in lines[-1], text[-2000:]
            else:
                assert len(lines) == 1 and lines[0].startswith("trustlab: error: "), text[-2000:]
        return code, text
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- values that break parsers: huge, negative, non-finite, wrong type, deep -------------------------

numbers = st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, -1, 1e308, 10**400]))
scalars = st.one_of(numbers, st.text(max_size=12), st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)
junk_text = st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1")))


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(v), repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


@st.composite
def profile_toml(draw) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(junk_text)
    lines = [f"name = {_toml_value(draw(st.one_of(st.just('chip'), scalars)))}"]
    if draw(st.booleans()):
        lines.append(f"family = {_toml_value(draw(st.sampled_from(['tpm1.2', 'tpm2', 'card', '']) | scalars))}")
    if draw(st.booleans()):
        lines.append("[" * draw(st.integers(1, 60)) + "]" * draw(st.integers(0, 60)))
    for comp in draw(st.lists(st.sampled_from(["ohc", "rsa_sign", "sha1_byte", "x y", "ohc"]), max_size=3)):
        lines.append(f'[components."{comp}"]')
        for key in draw(st.lists(st.sampled_from(["mean", "sd", "samples", "unit", "source", "bogus"]),
                                 max_size=4, unique=True)):
            lines.append(f"{key} = {_toml_value(draw(values))}")
    return "\n".join(lines) + "\n"


@given(text=profile_toml())
@fuzz(200)
def test_profile_import_toml(text):
    drive({"p.toml": text}, ["profiles", "import", "p.toml", "--name", "fz"])
    drive({"p.toml": text}, ["profiles", "show", "p.toml"])


@st.composite
def pro_text(draw) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(junk_text)
    keys = list(PRO_KEYS) + ["bogus", ""]
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        pairs = draw(st.lists(st.tuples(st.sampled_from(keys), st.one_of(
            numbers.map(str), st.text(max_size=8), st.just("1" * 5000))), max_size=3))
        lines.append(" ".join(f"{k}: {v}" for k, v in pairs) + draw(st.sampled_from(["", " # c", "#"])))
    return "\n".join(lines)


@given(text=pro_text())
@fuzz(200)
def test_profile_import_pro(text):
    drive({"p.pro": text}, ["profiles", "import", "p.pro", "--name", "fz"])


@st.composite
def measurement_csv(draw) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(junk_text)
    header = draw(st.lists(st.sampled_from(["ms", "ohc", "rsa_sign", "command", "weight", "center", "variant",
                                            "sd", "bogus", ""]), min_size=1, max_size=5))
    cell = st.one_of(numbers.map(str), st.sampled_from(["", "TPM_Sign", "TPM_Seal", "median", "x", '"a,b"']),
                     st.text(max_size=6))
    rows = draw(st.lists(st.lists(cell, min_size=0, max_size=len(header) + 2), max_size=8))
    return "\n".join([",".join(header)] + [",".join(r) for r in rows]) + draw(st.sampled_from(["", "\n", "\0"]))


@given(text=measurement_csv(), weights=st.sampled_from([[], ["--weights", "relative"], ["--weights", "given"]]))
@fuzz(200)
def test_fit_csv(text, weights):
    drive({"m.csv": text}, ["fit", "m.csv", "--out", "fitted.toml", *weights], outputs=("fitted.toml",))


@st.composite
def sweep_spec(draw) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(junk_text)
    lines = []
    if draw(st.booleans()):
        lines.append(f"name = {_toml_value(draw(st.one_of(st.just('s'), st.text(max_size=8), scalars)))}")
    lines.append(f"experiment = {_toml_value(draw(st.sampled_from(['lab-counting', 'timing-model', 'nope']) | values))}")
    for table in draw(st.lists(st.sampled_from(["fixed", "grid"]), max_size=2, unique=True)):
        lines.append(f"[{table}]")
        for key in draw(st.lists(st.sampled_from(["x", "y", "seed", "sleep", "bogus", "noise"]), max_size=3,
                                 unique=True)):
            lines.append(f"{key} = {_toml_value(draw(values))}")
    if draw(st.booleans()):
        lines.append("[[plot]]\n" + f"x = {_toml_value(draw(scalars))}\ny = {_toml_value(draw(scalars))}")
    return "\n".join(lines) + "\n"


@given(text=sweep_spec())
@fuzz(200)
def test_sweep_spec(text):
    drive({"s.toml": text}, ["sweep", "s.toml", "--dry-run", "--out", "out"])


@st.composite
def result_record(draw) -> str:
    if draw(st.integers(0, 6)) == 0:
        return draw(junk_text)
    record = {"experiment": draw(st.one_of(st.just("demo"), scalars)),
              "data": draw(values), "params": draw(st.one_of(st.just({}), values))}
    for key in draw(st.lists(st.sampled_from(["meta", "references", "profiles", "text", "argv", "error",
                                              "violations"]), max_size=3, unique=True)):
        if key == "meta":
            record["meta"] = {k: draw(values) for k in draw(st.lists(
                st.sampled_from(["tools", "profile_versions", "wall_s", "description", "seed"]), max_size=3))}
        elif key == "references":
            record["references"] = draw(st.lists(st.dictionaries(st.sampled_from(
                ["label", "model", "simulated", "reference", "error_pct", "unit"]), scalars, max_size=4), max_size=2)
                | values)
        else:
            record[key] = draw(values)
    if "error" in record and draw(st.booleans()):
        del record["data"]
    doc = [record, record] if draw(st.booleans()) else record
    return json.dumps(doc, allow_nan=True)


@given(text=result_record())
@fuzz(150)
def test_report_records(text):
    # exit 1 is a result: the records hold failed runs (the report shows them)
    drive({"r.json": text}, ["report", "r.json", "--out", "rep"], outputs=("rep",), results=(0, 1))


EXPERIMENTS = sorted(all_experiments())


@st.composite
def experiment_argv(draw, name: str) -> list[str]:
    parser = experiment_parser(name)
    flags = [o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")] + ["--bogus"]
    value = st.one_of(numbers.map(str), st.sampled_from(["", "-1", "nan", "inf", "0", str(2**64), "1" * 5000,
                                                         "a\0b", "../x", "both"]), st.text(max_size=8))
    argv = []
    for _ in range(draw(st.integers(0, 4))):
        flag = draw(st.sampled_from(flags))
        argv += [f"{flag}={draw(value)}"] if draw(st.booleans()) else [flag]
    return argv


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_argument_parsers(name):
    """Every experiment's parser (what `run`, sweeps and the flagship use): parsed values or one line."""

    @given(argv=experiment_argv(name))
    @fuzz(40)
    def check(argv):
        try:
            experiment_parser(name).parse_args(argv)
        except TrustlabError as exc:  # main() prints it through errors.one_line
            assert str(exc).strip(), "an empty message"

    check()
