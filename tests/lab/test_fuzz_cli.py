"""Property-based bad input for the CLI's file-reading entry points and every experiment's parser.

Each example writes one generated input file into a fresh directory and drives the
real entry point in process (``trustlab.cli.main``). Properties:

* the outcome is success (for ``report``: exit 1 when records hold failed runs), or
  exit status 2 with exactly one line on stderr
  (``trustlab: error: ...``, usage errors included) -- never an exception escaping ``main``,
  never a hang (a FIFO as input), never a multi-line message;
* no file other than the named output is created, changed or removed
  (the input included).

Issue 23 added: FIFOs and special files as every input, huge single lines, over-long
names, every numeric option's NaN/inf/huge values, and conflicting or repeated options.

A few hundred examples per target run in ``make test`` (seconds); set
``TRUSTLAB_FUZZ_EXAMPLES`` for longer runs (``benchmarks/bench_fuzz.py`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import stat
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

    def whole(only: str | None = None) -> argparse.ArgumentParser:  # every subcommand; `run` with every
        parser = real()  # experiment, not only the first one parsed
        list(_leaves(parser))
        return parser
    cli.build_parser = functools.cache(whole)
    yield
    cli.build_parser = real


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))


@pytest.fixture(autouse=True)
def _no_hang():
    """A command that blocks (a FIFO opened for reading) fails the test instead of stalling the suite."""
    def hung(signum, frame):
        raise TimeoutError("the command hung")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(300)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            path = Path(dirpath, name)
            mode = os.lstat(path).st_mode
            data = path.read_bytes() if stat.S_ISREG(mode) else f"(mode {stat.S_IFMT(mode)})".encode()
            out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def drive(files: dict[str, str | bytes], argv: list[str], outputs: tuple[str, ...] = (),
          results: tuple[int, ...] = (0,)) -> tuple[int, str]:
    """Write ``files`` into a fresh directory, run ``trustlab ARGV`` there, check the properties."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        for name, content in files.items():
            if callable(content):  # a special file: made by the callable at this path
                content(root / name)
                continue
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
            assert len(lines) == 1 and lines[0].startswith("trustlab: error: "), text[-2000:]
            assert len(lines[0]) < 3000, lines[0][:200]
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


# --- issue 23: special files, huge lines, long names, every numeric option, conflicting options ------

VALID = {
    "p.toml": 'name = "p"\nfamily = "tpm1.2"\n[components.ohc]\nmean = 1.0\nunit = "call"\n',
    "p.pro": "overconst: 1\noverinrate: 0.1\noveroutrate: 0.1\ndecrypt: 1\nencrypt: 1\nsign: 1\nhashrate: 0.1\n",
    "m.csv": "ms,ohc,rsa_sign\n1.5,1,0\n301.2,1,1\n2.9,2,0\n",
    "s.toml": 'experiment = "lab-counting"\n[grid]\nx = [1]\n',
    "r.json": json.dumps({"experiment": "demo", "data": {"x": 1}}),
    "t.trace": "increment 0\nread 1\n",
    "j.csv": "Manufacturer;IFX\n",
}

# every command that reads a file the user names; {} is that file
READERS = [
    (["profiles", "show", "{}"], "p.toml"), (["profiles", "show", "{}"], "p.pro"),
    (["profiles", "import", "{}", "--name", "fz"], "p.toml"), (["profiles", "import", "{}", "--name", "fz"], "p.pro"),
    (["profiles", "import-jcalgtest", "{}", "--print"], "j.csv"), (["profiles", "export", "{}"], "p.toml"),
    (["estimate", "--profile", "{}", "TPM_Sign"], "p.toml"), (["fit", "{}"], "m.csv"),
    (["report", "{}", "--out", "rep"], "r.json"), (["sweep", "{}", "--dry-run", "--out", "sw"], "s.toml"),
    (["run", "counters", "--scheme", "log", "--counters", "2", "--trace", "{}"], "t.trace"),
    (["run", "timing-model", "--no-simulate", "--profile", "{}"], "p.toml"),
]


def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


def _dir(path):
    path.mkdir()


SPECIAL = {"fifo": _fifo, "socket": _socket, "directory": _dir,
           "dev_zero": lambda p: os.symlink("/dev/zero", p), "dev_null": lambda p: os.symlink("/dev/null", p),
           "loop": lambda p: os.symlink(p.name, p)}


@pytest.mark.parametrize("kind", sorted(SPECIAL) + ["long_name", "missing"])
@pytest.mark.parametrize("argv, valid", READERS, ids=lambda x: x if isinstance(x, str) else " ".join(x[:2]))
def test_special_files_as_every_input(argv, valid, kind):
    """A FIFO, a device, a socket, a directory, a link loop, a name too long or missing: one line, at once."""
    name = {"long_name": "L" * 300, "missing": "nothing"}.get(kind, "x") + Path(valid).suffix
    files = {k: v for k, v in VALID.items()}
    if kind in SPECIAL:
        files[name] = SPECIAL[kind]
    code, text = drive(files, [a.replace("{}", name) for a in argv], outputs=("rep", "sw", "home"))
    assert code == 2, text


@given(size=st.sampled_from([70_000, 1_100_000, 3_000_000]), fill=st.sampled_from(["A", "\0", ",", "#", "1"]),
       target=st.sampled_from(READERS))
@fuzz(12)
def test_one_huge_line_in_every_input(size, fill, target):
    argv, valid = target
    files = dict(VALID)
    files[valid] = VALID[valid].splitlines()[0] + "\n" + fill * size + "\n"
    drive(files, [a.replace("{}", valid) for a in argv], outputs=("rep", "sw", "home"), results=(0, 1))


def _leaves(parser, prefix=()):
    """(command words, parser) of every leaf command but ``serve`` (the serve issue's)."""
    if hasattr(parser, "_populate"):
        parser._populate([])  # every experiment with its options (not the help-only index)
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield list(prefix), parser
        return
    for word, child in subs[0].choices.items():
        if word != "serve":
            yield from _leaves(child, (*prefix, word))


NUMERIC = {"int", "float", "seed", "_probability", "_positive", "_handle"}


def _numeric_options():
    return [(words, action.option_strings[-1]) for words, parser in _leaves(cli.build_parser())
            for action in parser._actions
            if action.option_strings and getattr(action.type, "__name__", None) in NUMERIC
            and not any(w.startswith("lab-") for w in words)]  # not the tests' own counting experiment


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", str(2**64), f"-{2**64}", "1e400", "9" * 5000, "", "--"])
def test_every_numeric_option_refuses_non_finite_and_huge_values(value):
    """Every option that takes a number, of every command: NaN, infinities and huge values are refused."""
    options = _numeric_options()
    assert len(options) > 30
    for words, flag in options:
        code, text = drive(dict(VALID), [*words, f"{flag}={value}"], outputs=("home",))
        assert code == 2, (words, flag, value, text)


CHEAP = [["run", "ae"], ["run", "oracle", "--queries", "1"], ["run", "ftpm-crash", "--commands", "2"],
         ["estimate", "--profile", "atmel-2010", "TPM_Sign"], ["profiles", "list"], ["fit", "m.csv"],
         ["run", "counters", "--scheme", "log", "--counters", "2", "--requests", "3"], ["flagship", "--list"],
         ["sweep", "s.toml", "--dry-run", "--out", "sw"], ["run", "hbs", "--h", "10", "--d", "2"]]


@st.composite
def conflicting(draw):
    base = draw(st.sampled_from(CHEAP))
    parser = dict((tuple(w), p) for w, p in _leaves(cli.build_parser()))
    words = next(w for w in parser if list(w) == base[:len(w)])
    actions = [a for a in parser[words]._actions if a.option_strings and a.dest not in ("help", "save", "out")]
    argv = list(base)
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(actions))
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv += [flag] * draw(st.integers(1, 2))
            continue
        pool = list(action.choices) if action.choices else ["1", "2", "0", "-1", "0.5", "nan", "x", "", "--"]
        for value in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2)):  # repeated with other values
            argv.append(f"{flag}={value}")
    return argv


@given(argv=conflicting())
@fuzz(60)
def test_conflicting_and_repeated_options(argv):
    drive(dict(VALID), argv, outputs=("sw", "home"), results=(0, 1))
