"""Recorded-workload lines and files for the replay tests, and the check that a bad trace is refused cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.errors import TrustlabError
from trustlab.replay import load


def line(**over) -> str:
    """One v2 trace line (an ECDSA TPM2_Sign) with ``over``'s fields replaced or added."""
    rec = {"v": 2, "seq": 1, "command": "TPM2_Sign", "code": "0x15d", "variant": "ecc256", "in_bytes": 73,
           "out_bytes": 91, "rc": 0, "modelled_ms": 1.0, "served_ms": 1.0, "client": 1, "t_ms": 0.0}
    rec.update(over)
    return json.dumps(rec)


def write(tmp_path: Path, *lines: str, name: str = "t.jsonl") -> Path:
    """``lines`` as a trace file ``name`` under ``tmp_path``."""
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def assert_refused_in_one_line(path: Path, message: str, capsys) -> None:
    """The loader refuses ``path`` with ``message``; ``trustlab replay`` exits 2 with one stderr line naming
    the file and where in it, no traceback."""
    with pytest.raises(TrustlabError, match=message):
        load.read(path)
    assert main(["replay", str(path), "--profiles", "swtpm-native"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and f"{path.name}:" in err
