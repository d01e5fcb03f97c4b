"""Issue 23's campaign: thousands of hostile command lines over every subcommand and option.

Each case is one ``trustlab`` command line run in a directory of its own, holding a set of
valid input files; the case changes one thing about a valid, cheap invocation:

* **input**: a file the command reads becomes a FIFO, ``/dev/zero``, ``/dev/null``, a
  directory, a socket, a link loop, a missing file, a name of 300 characters, one huge line,
  binary junk, an empty file, or the valid file behind a UTF-8 byte-order mark;
* **value**: one option (any of the command's options, found by walking the real parser)
  gets NaN, +-inf, -1, 0, 2^64, 1e400, 1e308, an empty string, 5,000 digits, hex, a
  newline, or a path climbing out of the directory;
* **conflict**: an option given twice with different values, two options at once, or a
  rule the CLI states (``--only X --skip X``, ``--fix c=1 --fix c=2``, zipf options without
  ``--workload zipf``, ``--trace`` with ``--requests``, ``--force`` without ``--save`` ...);
* **output**: a file the command writes is a FIFO, a directory, one of its inputs, or an
  over-long name;
* **tokens**: a random sequence of the command's own option strings and values.

Every file in the directory is hashed before and after. A case runs in a forked child of a
process that has imported trustlab once (an interpreter start per case would cost the
machine an hour), in its own session, killed with its group after a timeout. Counted:

* ``tracebacks``: "Traceback" on stderr, or an exit status other than 0, 1, 2 (a signal);
* ``hangs``: not finished within the timeout;
* ``over_1gb``: peak RSS of the command (or of a process it waited for) above 1 GiB;
* ``wrong_exits``: an input the case knows is invalid (a FIFO, NaN, a stated rule broken)
  that did not exit 2, or an exit 2 whose stderr is not exactly one ``trustlab: error:`` line;
* ``files_changed``: a file created, changed or removed other than the outputs the command
  line names (and the profile store under ``$TRUSTLAB_HOME``).

``serve`` is left out (the serve issue covers it). Run: ``python -m benchmarks.fuzz_campaign
--cases 3000``; ``benchmarks fuzz`` runs a smaller campaign.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import resource
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GIB = 1 << 30
TIMEOUT_S = 60.0
LONG = "L" * 300
HANDLE = "0x81000001"
TCTI = ["--tcti", "swtpm:port=1"]  # nothing listens there: a fast "connection refused"

# --- the valid, cheap invocation of every command; {in:KIND} and {out:NAME} mark the files ---------

BASES: dict[str, list[str]] = {
    "estimate": ["estimate", "--profile", "atmel-2010", "TPM_Sign"],
    "estimate file": ["estimate", "--profile", "{in:p.toml}", "TPM_Sign"],
    "fit": ["fit", "{in:m.csv}", "--out", "{out:fitted.toml}"],
    "flagship": ["flagship", "--list"],
    "measure": ["measure", *TCTI, "--out", "{out:measured.csv}"],
    "profiles list": ["profiles", "list"],
    "profiles show": ["profiles", "show", "{in:p.toml}"],
    "profiles show pro": ["profiles", "show", "{in:p.pro}"],
    "profiles import": ["profiles", "import", "{in:p.toml}", "--name", "fz"],
    "profiles import pro": ["profiles", "import", "{in:p.pro}", "--name", "fz"],
    "profiles import-jcalgtest": ["profiles", "import-jcalgtest", "{in:j.csv}", "--print"],
    "profiles export": ["profiles", "export", "{in:p.toml}"],
    "report": ["report", "{in:r.json}", "--out", "{out:rep}"],
    "sweep": ["sweep", "{in:s.toml}", "--dry-run", "--out", "{out:sw}"],
    "sweep run": ["sweep", "{in:s.toml}", "--out", "{out:sw}", "--jobs", "1", "--no-progress"],
    "tiga": ["tiga"],
    "validate": ["validate", "atmel-2010"],
    "run ae": ["run", "ae"],
    "run counters": ["run", "counters", "--scheme", "log", "--counters", "2", "--requests", "4"],
    "run counters trace": ["run", "counters", "--scheme", "log", "--counters", "2", "--trace", "{in:t.trace}"],
    "run counters save": ["run", "counters", "--scheme", "log", "--counters", "2", "--save", "{out:res.json}"],
    "run ftpm-crash": ["run", "ftpm-crash", "--commands", "2"],
    "run ftpm-vs-dtpm": ["run", "ftpm-vs-dtpm", "--reps", "1"],
    "run hbs": ["run", "hbs", "--h", "10", "--d", "2"],
    "run oracle": ["run", "oracle", "--queries", "1"],
    "run pqc-tpm": ["run", "pqc-tpm", "--draws", "100", "--profiles", "infineon-slb9672-wolftpm"],
    "run timing-model": ["run", "timing-model", "--no-simulate", "--profile", "{in:p.toml}"],
    "run validate": ["run", "validate"],
    "run wallet": ["run", "wallet", "--purchases", "5", "--merchants", "2", "--buyers", "2"],
    "tpm2 pqc createprimary": ["tpm2", "pqc", "createprimary", *TCTI, "--alg", "ML-DSA-65",
                               "--context-out", "{out:key.ctx}"],
    "tpm2 pqc create": ["tpm2", "pqc", "create", *TCTI, "--alg", "ML-KEM-768", "--parent", HANDLE,
                        "--private-out", "{out:priv.bin}"],
    "tpm2 pqc load": ["tpm2", "pqc", "load", *TCTI, "--parent", HANDLE, "--private", "{in:msg.bin}",
                      "--public", "{in:pub.bin}"],
    "tpm2 pqc sign-digest": ["tpm2", "pqc", "sign-digest", *TCTI, "--key", HANDLE, "--message", "{in:msg.bin}"],
    "tpm2 pqc verify-digest": ["tpm2", "pqc", "verify-digest", *TCTI, "--key", HANDLE, "--message",
                               "{in:msg.bin}", "--signature", "{in:pub.bin}"],
    "tpm2 pqc encapsulate": ["tpm2", "pqc", "encapsulate", *TCTI, "--key", HANDLE],
    "tpm2 pqc decapsulate": ["tpm2", "pqc", "decapsulate", *TCTI, "--key", HANDLE, "--ciphertext", "{in:msg.bin}"],
    "tpm2 pqc quote": ["tpm2", "pqc", "quote", *TCTI, "--key", HANDLE],
    "tpm2 pqc measure": ["tpm2", "pqc", "measure", *TCTI, "--alg", "ML-DSA-65"],
    "tpm2 pqc flush": ["tpm2", "pqc", "flush", *TCTI, "--key", HANDLE],
}

# rules the command line states: each breaks one, so each must exit 2
RULES: list[list[str]] = [
    ["flagship", "--list", "--only", "timing-model", "--skip", "timing-model"],
    ["fit", "m.csv", "--fix", "ohc=1", "--fix", "ohc=2"],
    ["fit", "m.csv", "--family", ""],
    ["profiles", "list", "--family", ""],
    ["run", "counters", "--counters", "2", "--requests", "2", "--zipf-constant", "nan"],
    ["run", "counters", "--counters", "2", "--requests", "2", "--zipf-rho", "inf"],
    ["run", "counters", "--counters", "2", "--requests", "2", "--zipf-constant", "0.5"],
    ["run", "counters", "--counters", "2", "--trace", "t.trace", "--requests", "5"],
    ["run", "counters", "--counters", "2", "--workload", "zipf", "--zipf-rho", "1", "--zipf-constant", "0.5"],
    ["run", "counters", "--counters", "2", "--save", "m.csv"],
    ["run", "ae", "--force"],
    ["run", "pqc-tpm", "--seed", "-1"],
    ["run", "pqc-tpm", "--seed", "4294967296"],
    ["run", "pqc-tpm", f"--seed={2**64}"],
    ["run", "ae", "--save", "r.json"],  # exists: not replaced without --force
    ["sweep", "s.toml", "--params", "timing-model"],
    ["sweep", "s.toml", "--dry-run", "--fresh"],
    ["tpm2", "pqc", "createprimary", "--tcti", "", "--alg", "ML-DSA-65"],
    # one rule for every file output: an existing file is replaced only with --force, --force needs the output
    ["fit", "m.csv", "--out", "p.toml"],
    ["fit", "m.csv", "--force"],
    ["measure", *TCTI, "--out", "m.csv"],
    ["tpm2", "pqc", "createprimary", *TCTI, "--alg", "ML-DSA-65", "--context-out", "msg.bin"],
    ["tpm2", "pqc", "quote", *TCTI, "--key", HANDLE, "--force"],
    ["profiles", "import-jcalgtest", "j.csv", "--print", "--force"],
    # an option without effect in the chosen mode, even at its default value
    ["run", "counters", "--counters", "2", "--scheme", "log-tpm2", "--tpm12", "inproc"],
    ["run", "counters", "--counters", "2", "--scheme", "log", "--attest-every", "1"],
    ["run", "counters", "--counters", "2", "--trace", "t.trace", "--workload", "roundrobin"],
    ["run", "counters", "--counters", "2", "--op", "read", "--read-fraction", "0.5"],
    ["run", "ftpm-crash", "--commands", "2", "--p-typo", "0.1"],
    ["run", "ae", "--protocol", "T=1"],
    ["run", "pqc-tpm", "--algorithms", "ML-KEM-768", "--message-bytes", "100"],
    ["flagship", "--list", "--jobs", "1"],
]

BAD_INPUTS = ("fifo", "dev_zero", "dev_null", "directory", "socket", "loop", "missing", "long_name")
ODD_INPUTS = ("huge_line", "huge_zeros", "junk", "empty", "bom", "nul")
BAD_OUTPUTS = ("fifo", "long_name", "input", "existing")  # existing: replaced only with --force
ODD_OUTPUTS = ("directory", "missing_parent")
NUMERIC_TYPES = {"int", "float", "seed", "_probability", "_positive", "_handle"}
NON_FINITE = ["nan", "inf", "-inf", "NaN", "+inf", str(2**64), "1e400", "9" * 5000, ""]
OTHER_VALUES = ["-1", "0", "1e308", "-1e308", "0x10", " 1", "1_000", "a\nb", "../../x", "\u00e9\u00e8", "--", "-"]


# --- valid input files, written into every case's directory --------------------------------------------

def _fixtures() -> dict[str, bytes]:
    from trustlab.timing import registry
    from trustlab.timing.pro_format import export_pro

    atmel = registry.load("atmel-2010")
    spec = ('name = "s"\nexperiment = "timing-model"\n[fixed]\nsimulate = false\nprofile = ["atmel-2010"]\n'
            "[grid]\nseed = [1, 2]\n")
    record = {"experiment": "demo", "params": {}, "data": {"x": 1.0}, "text": "demo"}
    jcalgtest = ("Manufacturer;IFX\nTPM2_Create;RSA 2048\noperation stats (ms/op):;avg op:;120.5;min op:;"
                 "110.2;max op:;130.9\n")
    return {"p.toml": atmel.to_toml().encode(), "p.pro": export_pro(atmel).encode(),
            "m.csv": b"ms,ohc,rsa_sign\n1.5,1,0\n301.2,1,1\n2.9,2,0\n602.0,2,2\n",
            "s.toml": spec.encode(), "r.json": json.dumps(record).encode(),
            "t.trace": b"increment 0\nread 1\nincrement 1\n", "j.csv": jcalgtest.encode(),
            "msg.bin": os.urandom(64), "pub.bin": os.urandom(32)}


# --- cases ---------------------------------------------------------------------------------------------

@dataclass
class Case:
    kind: str
    base: str
    argv: list[str]
    outputs: list[str] = field(default_factory=list)
    setup: dict[str, str] = field(default_factory=dict)  # file name -> what to put there
    must_fail: bool = False
    protected: list[str] = field(default_factory=list)  # named as an output, but must stay as it is


def _options(parser_of: dict[str, Any], base: str) -> list[argparse.Action]:
    return [a for a in parser_of[base]._actions if a.option_strings and a.dest not in ("help",)]


def leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of each base command, found by walking the real ``trustlab`` parser."""
    import trustlab.cli as cli

    root = cli.build_parser()
    out = {}
    for base, argv in BASES.items():
        parser = root
        for word in argv:
            if hasattr(parser, "_populate"):
                parser._populate([])  # every experiment with its options
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not subs or word not in subs[0].choices:
                break
            parser = subs[0].choices[word]
        out[base] = parser
    return out


def _fill(argv: list[str], inputs: dict[str, str] | None = None, outputs: dict[str, str] | None = None
          ) -> tuple[list[str], list[str]]:
    """Placeholders to names; ``inputs``/``outputs`` replace a placeholder's file by another name."""
    words, outs = [], []
    for word in argv:
        if word.startswith("{in:"):
            name = word[4:-1]
            words.append((inputs or {}).get(name, name))
        elif word.startswith("{out:"):
            name = word[5:-1]
            name = (outputs or {}).get(name, name)
            words.append(name)
            outs.append(name)
        else:
            words.append(word)
    return words, outs


def _value(rng: random.Random, action: argparse.Action) -> tuple[str, bool]:
    """A hostile value for ``action`` and whether the command must refuse it."""
    numeric = getattr(action.type, "__name__", None) in NUMERIC_TYPES
    if rng.random() < 0.6:
        value = rng.choice(NON_FINITE)
        return value, numeric
    return rng.choice(OTHER_VALUES + ([rng.choice(action.choices)] if action.choices else [])), False


def generate(n: int, seed: int, parsers: dict[str, argparse.ArgumentParser]) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    with_inputs = [b for b, a in BASES.items() if any(w.startswith("{in:") for w in a)]
    with_outputs = [b for b, a in BASES.items() if any(w.startswith("{out:") for w in a)]
    while len(cases) < n:
        pick = rng.random()
        if pick < 0.25:
            base = rng.choice(with_inputs)
            name = rng.choice([w[4:-1] for w in BASES[base] if w.startswith("{in:")])
            kind = rng.choice(BAD_INPUTS + ODD_INPUTS)
            target = {"long_name": LONG + Path(name).suffix, "missing": "missing" + Path(name).suffix}.get(
                kind, f"x-{kind}{Path(name).suffix}")
            argv, outs = _fill(BASES[base], inputs={name: target})
            cases.append(Case(f"input:{kind}", base, argv, outs, {target: f"{kind}:{name}"},
                              must_fail=kind in BAD_INPUTS))
        elif pick < 0.6:
            base = rng.choice(list(BASES))
            options = _options(parsers, base)
            if not options:
                continue
            action = rng.choice(options)
            value, refuse = _value(rng, action)
            if action.nargs == 0:
                value, refuse = rng.choice(["", "1"]), False
            flag = rng.choice(action.option_strings)
            argv, outs = _fill(BASES[base])
            extra = [f"{flag}={value}"] if flag.startswith("--") and (rng.random() < 0.7 or value.startswith("-")) \
                else [flag, value]
            if action.nargs == 0:
                extra = [flag] if value == "" else [f"{flag}={value}"]
                refuse = value != ""
            cases.append(Case(f"value:{'bad' if refuse else 'odd'}", base, argv + extra, outs + (
                [value] if action.dest in ("out", "save") or "out" in action.dest else []), must_fail=refuse))
        elif pick < 0.75:
            if rng.random() < 0.35:
                argv = list(rng.choice(RULES))
                cases.append(Case("conflict:rule", argv[0], argv, must_fail=True))
                continue
            base = rng.choice(list(BASES))
            options = [a for a in _options(parsers, base) if a.nargs != 0]
            if not options:
                continue
            argv, outs = _fill(BASES[base])
            a, b = rng.choice(options), rng.choice(options)
            for action in (a, b):
                value = rng.choice(list(action.choices)) if action.choices else rng.choice(["1", "2", "0.5", "x"])
                argv += [f"{action.option_strings[-1]}={value}"]
            cases.append(Case("conflict:repeat" if a is b else "conflict:pair", base, argv, outs))
        elif pick < 0.88:
            base = rng.choice(with_outputs)
            name = rng.choice([w[5:-1] for w in BASES[base] if w.startswith("{out:")])
            kind = rng.choice(BAD_OUTPUTS + ODD_OUTPUTS)
            ins = [w[4:-1] for w in BASES[base] if w.startswith("{in:")]
            if kind == "input" and not ins:
                continue
            target = {"long_name": LONG, "input": ins[0] if ins else "", "missing_parent": "no/such/dir/" + name
                      }.get(kind, f"x-{kind}-{name}")
            argv, outs = _fill(BASES[base], outputs={name: target})
            setup = {target: f"out_{kind}:{name}"} if kind in ("fifo", "directory", "existing") else {}
            # never changed: an input, a FIFO, a foreign directory (a sweep's --out is the parent of its own
            # new DIR/NAME, so there a directory is simply where it writes)
            protected = [target] if kind in ("input", "fifo", "existing") or (kind == "directory" and base[:5] != "sweep") else []
            cases.append(Case(f"output:{kind}", base, argv, outs, setup, must_fail=kind in BAD_OUTPUTS,
                              protected=protected))
        else:
            base = rng.choice(list(BASES))
            flags = [o for a in _options(parsers, base) for o in a.option_strings] + ["--bogus", "-x"]
            argv, outs = _fill(BASES[base])
            for _ in range(rng.randint(1, 5)):
                argv.append(rng.choice(flags) if rng.random() < 0.6 else rng.choice(NON_FINITE + OTHER_VALUES))
            cases.append(Case("tokens", base, argv, outs))
    return cases


# --- one case ------------------------------------------------------------------------------------------

def _materialise(root: Path, fixtures: dict[str, bytes], setup: dict[str, str]) -> None:
    for name, data in fixtures.items():
        (root / name).write_bytes(data)
    for name, what in setup.items():
        kind, _, source = what.partition(":")
        path = root / name
        if kind in ("fifo", "out_fifo"):
            os.mkfifo(path)
        elif kind == "dev_zero":
            os.symlink("/dev/zero", path)
        elif kind == "dev_null":
            os.symlink("/dev/null", path)
        elif kind in ("directory", "out_directory"):
            path.mkdir()
            (path / "inside").write_text("keep")
        elif kind == "socket":
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(path))
            sock.close()
        elif kind == "loop":
            os.symlink(name, path)
        elif kind in ("missing", "long_name"):
            pass
        elif kind == "huge_line":
            path.write_bytes(b"A" * 3_000_000)
        elif kind == "huge_zeros":
            path.write_bytes(b"\0" * 20_000_000)
        elif kind == "junk":
            path.write_bytes(os.urandom(4096))
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "bom":
            path.write_bytes(b"\xef\xbb\xbf" + fixtures[source])
        elif kind == "nul":
            data = fixtures[source]
            path.write_bytes(data[:len(data) // 2] + b"\0" + data[len(data) // 2:])
        elif kind == "out_existing":
            path.write_text("an earlier file")


def _snapshot(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts[:1] == ("home",):
            continue
        for name in filenames + dirnames:
            if rel_dir == Path(".") and name == "home":
                continue
            path = Path(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(mode):
                digest = "link:" + os.readlink(path)
            else:
                digest = f"mode:{stat.S_IFMT(mode)}"
            out[str(rel_dir / name)] = digest
    return out


def _child(root: Path, argv: list[str], rss_file: Path) -> None:
    """In the forked child: run ``trustlab ARGV`` in ``root``; never returns."""
    code = 99
    try:
        os.setsid()
        os.chdir(root)
        os.environ["TRUSTLAB_HOME"] = str(root / "home")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            out = os.open(root.parent / f"{root.name}.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, fd)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), line_buffering=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import trustlab.cli as cli

        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except BaseException:  # noqa: BLE001 - what escapes main is what the campaign counts
        traceback.print_exc()
        code = 99
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            rss_file.write_text(str(kids))
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code if isinstance(code, int) and 0 <= code < 256 else 99)


@dataclass
class Outcome:
    case: Case
    code: int | None
    wall_s: float
    rss_kb: int
    stderr: str
    changed: list[str]

    @property
    def hang(self) -> bool:
        return self.code is None

    @property
    def traceback(self) -> bool:
        return not self.hang and ("Traceback (most recent call last)" in self.stderr or self.code not in (0, 1, 2))

    @property
    def wrong_exit(self) -> bool:
        if self.hang or self.traceback:
            return False
        if self.case.must_fail and self.code != 2:
            return True
        if self.code == 2:  # one error line, the last (progress lines before it are not the error)
            lines = self.stderr.strip().splitlines()
            errors = [ln for ln in lines if ln.startswith("trustlab: error: ")]
            return not (len(errors) == 1 and lines[-1] == errors[0]
                        and not any(ln.startswith(("usage:", "ERROR:", "WARNING:")) for ln in lines))
        return False


class Runner:
    """Runs cases ``workers`` at a time in forked children of this (pre-imported) process."""

    def __init__(self, workers: int = 2, timeout: float = TIMEOUT_S) -> None:
        self.workers, self.timeout = workers, timeout
        self.tmp = Path(tempfile.mkdtemp(prefix="trustlab-fuzz-"))
        self.fixtures = _fixtures()

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _start(self, i: int, case: Case) -> dict[str, Any]:
        root = self.tmp / f"case{i}"
        root.mkdir()
        _materialise(root, self.fixtures, case.setup)
        before = _snapshot(root)
        rss_file = self.tmp / f"case{i}.rss"
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(root, case.argv, rss_file)
        return {"i": i, "case": case, "pid": pid, "root": root, "before": before, "rss_file": rss_file,
                "started": time.monotonic()}

    def _finish(self, job: dict[str, Any], status: int | None, usage: Any) -> Outcome:
        root = job["root"]
        try:
            os.killpg(job["pid"], signal.SIGKILL)  # whatever the command left running
        except (ProcessLookupError, PermissionError):
            pass
        wall = time.monotonic() - job["started"]
        code = None if status is None else (os.waitstatus_to_exitcode(status))
        if code is not None and code < 0:
            code = 128 - code  # killed by a signal: not 0, 1 or 2
        stderr_path = root.parent / f"{root.name}.stderr"
        stderr = stderr_path.read_text(errors="replace")[-20000:] if stderr_path.exists() else ""
        kids = int(job["rss_file"].read_text() or 0) if job["rss_file"].exists() else 0
        rss = max(usage.ru_maxrss if usage is not None else 0, kids)
        after = _snapshot(root)
        allowed = [os.path.normpath(o) for o in named_outputs(job["case"]) if o]
        changed = sorted(k for k in before_after(job["before"], after)
                         if not any(k == o or k.startswith(o + "/") or o.startswith(k + "/") for o in allowed))
        outcome = Outcome(job["case"], code, round(wall, 2), rss, stderr, changed)
        for extra in (root.parent / f"{root.name}.stdout", stderr_path, job["rss_file"]):
            extra.unlink(missing_ok=True)
        _remove(root)
        return outcome

    def run(self, cases: list[Case], budget_s: float | None = None, progress: bool = True) -> list[Outcome]:
        pending = list(enumerate(cases))
        running: list[dict[str, Any]] = []
        done: list[Outcome] = []
        started = time.monotonic()
        while pending or running:
            while pending and len(running) < self.workers and (
                    budget_s is None or time.monotonic() - started < budget_s):
                running.append(self._start(*pending.pop(0)))
            if not running:
                break
            time.sleep(0.01)
            for job in list(running):
                pid, status, usage = os.wait4(job["pid"], os.WNOHANG)
                if pid == 0:
                    if time.monotonic() - job["started"] < self.timeout:
                        continue
                    try:
                        os.killpg(job["pid"], signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.wait4(job["pid"], 0)
                    status, usage = None, None
                running.remove(job)
                done.append(self._finish(job, status, usage))
                if progress and len(done) % 100 == 0:
                    print(f"  {len(done)} cases, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return done


OUTPUT_FLAGS = ("--out", "--save", "--context-out", "--private-out", "--public-out", "--signature-out",
                "--ciphertext-out", "--attest-out")


def named_outputs(case: Case) -> list[str]:
    """Every path the command line names as an output (what it may create or replace), except the
    targets the case set up to stay untouched (an input, a FIFO, a foreign directory)."""
    out = []
    argv = case.argv
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag in OUTPUT_FLAGS:
            out.append(value if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
    return [o for o in out + case.outputs if o not in case.protected]


def before_after(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def _remove(root: Path) -> None:
    def onerror(func: Any, path: str, exc: Any) -> None:
        try:
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass
    shutil.rmtree(root, onerror=onerror)


def _preload() -> dict[str, argparse.ArgumentParser]:
    """Import what the commands import, once, before forking (each child then starts in milliseconds)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["TRUSTLAB_HOME"] = tempfile.mkdtemp(prefix="trustlab-fuzz-home-")
    import matplotlib.pyplot  # noqa: F401
    import scipy.optimize  # noqa: F401

    import trustlab.report  # noqa: F401
    import trustlab.sweep  # noqa: F401
    from trustlab.experiments.registry import all_experiments

    all_experiments()
    return leaf_parsers()


def campaign(cases: int = 3000, seed: int = 23, workers: int = 2, budget_s: float | None = None,
             timeout: float = TIMEOUT_S, progress: bool = True) -> dict[str, Any]:
    parsers = _preload()
    generated = generate(cases, seed, parsers)
    runner = Runner(workers, timeout)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.monotonic()
    try:
        outcomes = runner.run(generated, budget_s, progress)
    finally:
        runner.close()
    bad = {"tracebacks": [o for o in outcomes if o.traceback], "hangs": [o for o in outcomes if o.hang],
           "over_1gb": [o for o in outcomes if o.rss_kb * 1024 > GIB],
           "wrong_exits": [o for o in outcomes if o.wrong_exit], "files_changed": [o for o in outcomes if o.changed]}
    kinds: dict[str, int] = {}
    for o in outcomes:
        kinds[o.case.kind] = kinds.get(o.case.kind, 0) + 1
    return {
        "cases": len(outcomes), "generated": len(generated), "seed": seed, "workers": workers,
        "wall_s": round(time.monotonic() - t, 1), **{k: len(v) for k, v in bad.items()},
        "commands": len({o.case.base for o in outcomes}),
        "exit_codes": {str(c): sum(1 for o in outcomes if o.code == c) for c in sorted(
            {o.code for o in outcomes}, key=lambda c: -1 if c is None else c)},
        "kinds": dict(sorted(kinds.items())),
        "max_rss_mb": round(max((o.rss_kb for o in outcomes), default=0) / 1024),
        "preloaded_parent_rss_mb": round(base_rss / 1024),
        "slowest_s": max((o.wall_s for o in outcomes), default=0.0),
        "examples": {k: [{"argv": o.case.argv[:12], "code": o.code, "stderr": o.stderr.strip()[-600:],
                          "changed": o.changed[:5], "rss_mb": round(o.rss_kb / 1024), "wall_s": o.wall_s}
                         for o in v[:5]] for k, v in bad.items() if v},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz_campaign", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget", type=float, default=None, metavar="S", help="stop starting cases after S seconds")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="S", help="a case running longer hangs")
    parser.add_argument("--out", type=Path, default=None, help="also write the counts as JSON here")
    args = parser.parse_args(argv)
    result = campaign(args.cases, args.seed, args.workers, args.budget, args.timeout)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if not any(result[k] for k in ("tracebacks", "hangs", "over_1gb", "wrong_exits", "files_changed")) else 1


if __name__ == "__main__":
    sys.exit(main())
