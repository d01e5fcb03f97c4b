"""The cost model read off the wire, object tracking, and the serve/measure CLIs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from tpm2_pytss.constants import TPMA_OBJECT
from tpm2_pytss.types import TPM2B_PUBLIC

from trustlab.cli import main
from trustlab.devices.tpm2 import objects, wire
from trustlab.devices.tpm2.cost import assess
from trustlab.serving.proxy import TimingProxy

from .conftest import make_profile, needs_swtpm

OK = wire.error_response(0)


def _public(spec: str) -> bytes:
    attrs = TPMA_OBJECT.SIGN_ENCRYPT | TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.SENSITIVEDATAORIGIN
    if spec == "keyedhash":
        attrs = TPMA_OBJECT.USERWITHAUTH
    return TPM2B_PUBLIC.parse(spec, objectAttributes=attrs).publicArea.marshal()


@pytest.mark.parametrize("spec,variant", [("rsa2048:rsassa-sha256:null", "rsa2048"), ("rsa1024", "rsa1024"),
                                          ("ecc256:ecdsa-sha256:null", "ecc256"), ("ecc384", "ecc384"),
                                          ("keyedhash", "keyedhash")])
def test_key_variant_of_real_public_areas(spec, variant):
    assert objects.key_variant(_public(spec)) == variant


def test_sign_cost_follows_the_handle_and_errors_cost_overhead_only():
    table = objects.ObjectTable()
    public = _public("ecc256:ecdsa-sha256:null")
    load = wire.build_command(0x157, b"\x80\x00\x00\x00" + b"\x00\x00" + len(public).to_bytes(2, "big") + public)
    table.observe(0x157, load, OK + (0x80000001).to_bytes(4, "big"), 0)
    assert table.variant(0x80000001) == "ecc256"
    sign = wire.build_command(0x15D, (0x80000001).to_bytes(4, "big") + b"\x00" * 40)
    prof = make_profile(ohc=1.0, ohir=0.0, ohor=0.0, ecc256_sign=30.0)
    ok = assess(sign, OK + b"\x00" * 80, table, prof)
    assert ok.variant == "ecc256" and ok.terms["ecc256_sign"] == 1 and ok.modelled
    failed = assess(sign, wire.error_response(0x18B), table, prof)
    assert "ecc256_sign" not in failed.terms and failed.rc == 0x18B
    flush = wire.build_command(0x165, (0x80000001).to_bytes(4, "big"))
    table.observe(0x165, flush, OK, 0)
    assert table.variant(0x80000001) is None


def test_missing_component_and_unknown_code_fall_back_to_overhead():
    table = objects.ObjectTable()
    prof = make_profile(ohc=1.0, ohir=0.1, ohor=0.1)
    nv = assess(wire.build_command(0x134, b"\x00" * 20), OK, table, prof)
    assert nv.missing == ("nv_increment",) and not nv.modelled and set(nv.terms) == {"ohc", "ohir", "ohor"}
    odd = assess(wire.build_command(0x3FE, b""), OK, table, prof)
    assert odd.command == "TPM2_CC_0x3fe" and not odd.modelled


def test_hash_cost_counts_the_hashed_bytes():
    data = b"\x11" * 100
    cmd = wire.build_command(0x17D, len(data).to_bytes(2, "big") + data + b"\x00\x0b\x40\x00\x00\x01")
    cost = assess(cmd, OK, objects.ObjectTable(), make_profile(ohc=1, ohir=0, ohor=0, sha256_byte=0.01))
    assert cost.terms["sha256_byte"] == 100


@needs_swtpm
def test_serve_cli_runs_and_traces(tmp_path):
    trace = tmp_path / "trace.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from trustlab.cli import main; sys.exit(main())", "serve", "--profile", "swtpm-native",
                             "--port", "0", "--virtual", "--trace", str(trace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        assert "swtpm-native" in line, line + proc.stderr.read()
        port = int(proc.stdout.readline().strip().rsplit("port=", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(wire.build_command(0x17B, b"\x00\x08"))
            assert wire.response_code(s.recv(100)) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    rec = json.loads(trace.read_text().splitlines()[0])
    assert rec["command"] == "TPM2_GetRandom" and rec["modelled_ms"] > 0


def test_cli_errors_are_one_line(capsys):
    assert main(["serve", "--profile", "multos-sle78"]) == 2
    assert "family 'card'" in capsys.readouterr().err
    assert main(["serve", "--profile", "swtpm-native", "--backend", "tcp:nohost"]) == 2
    assert "tcp:HOST:PORT" in capsys.readouterr().err
    assert main(["serve", "--profile", "swtpm-native", "--backend", "device:/nonexistent"]) == 2
    assert main(["measure", "--tcti", "swtpm:port=1", "--out", "/tmp/x.csv"]) == 2
    assert main(["measure", "--tcti", "swtpm:port=1", "--out", "/nonexistent/dir/x.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "Traceback" not in err


@needs_swtpm
def test_proxy_queues_concurrent_clients_like_one_tpm(swtpm):
    """Two clients at once: the second waits for the first (one TPM, one command at a time)."""
    import threading

    prof = make_profile(ohc=40.0, ohir=0.0, ohor=0.0)
    with TimingProxy(prof, swtpm) as proxy:
        done = []

        def client():
            with socket.create_connection(("127.0.0.1", proxy.port)) as s:
                s.sendall(wire.build_command(0x17B, b"\x00\x08"))
                s.recv(100)
            done.append(time.perf_counter())

        t0 = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (max(done) - t0) * 1000 >= 80.0


@needs_swtpm
@pytest.mark.skipif(not __import__("shutil").which("tpm2_pcrread"), reason="tpm2-tools not installed")
def test_estimate_prices_what_serve_charges(swtpm, tmp_path, capsys):
    """Every command serve charges as overhead + bytes, estimate prices the same, marked 'overhead only'."""
    from trustlab.timing import registry
    from trustlab.timing.formula_sets.tpm2 import OVERHEAD_SIZES

    profile = registry.load("nuvoton-npct750-wolftpm")  # no nv_write: NV_Write/EvictControl are overhead only
    with TimingProxy(profile, swtpm, virtual=True, rm=False) as proxy:
        env = dict(os.environ, TPM2TOOLS_TCTI=proxy.tcti, TSS2_LOG="all+NONE")
        (tmp_path / "data").write_bytes(b"x" * 16)
        for argv in (["tpm2_pcrread", "sha256:0"], ["tpm2_getcap", "properties-fixed"],
                     ["tpm2_createprimary", "-C", "o", "-c", "p.ctx"],
                     ["tpm2_evictcontrol", "-C", "o", "-c", "p.ctx", "0x81000007"],
                     ["tpm2_nvdefine", "-C", "o", "-s", "16", "0x1500009"],
                     ["tpm2_nvwrite", "-C", "o", "-i", "data", "0x1500009"], ["tpm2_selftest"]):
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
            assert done.returncode == 0, (argv, done.stderr)
        records = list(proxy.records)
    checked = set()
    for rec in records:
        if rec.command not in ("TPM2_PCR_Read", "TPM2_GetCapability", "TPM2_EvictControl", "TPM2_NV_Write",
                               "TPM2_SelfTest", "TPM2_ContextSave", "TPM2_ReadPublic") or rec.rc != 0:
            continue
        capsys.readouterr()
        assert main(["estimate", "--profile", profile.name, rec.command, "--in-bytes", str(rec.in_bytes),
                     "--out-bytes", str(rec.out_bytes), "--json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["ms"] == pytest.approx(rec.modelled_ms, abs=1e-9), rec.command
        assert row["note"].startswith("overhead only"), row
        checked.add(rec.command)
    assert {"TPM2_PCR_Read", "TPM2_GetCapability", "TPM2_EvictControl", "TPM2_NV_Write"} <= checked
    pcr = next(r for r in records if r.command == "TPM2_PCR_Read")
    assert (pcr.in_bytes, pcr.out_bytes) == OVERHEAD_SIZES["TPM2_PCR_Read"]  # the recorded default is real
    assert main(["estimate", "--profile", profile.name, "TPM2_PolicyOR", "--json"]) == 0  # no sizes: a bare header
    (row,) = json.loads(capsys.readouterr().out)
    assert row["note"] == "overhead only" and row["ms"] == pytest.approx(profile.mean("ohc"))
