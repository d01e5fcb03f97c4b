"""``trustlab tpm2 pqc ...`` verbs against an in-process serve (virtual mode)."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa

from trustlab.cli import main
from trustlab.serving.proxy import timed_swtpm

from .conftest import needs_swtpm

pytestmark = [pytest.mark.swtpm, needs_swtpm]
# the 1.85 chip in silicon: its buffer (8192) carries every parameter set; a chip of today's 2048 refuses
# most ML-DSA commands (tests/tpm2/test_pqc_serve.py)


@pytest.fixture(scope="module")
def tcti():
    with timed_swtpm("sealsq-qvault-pqc-tpm-wolftpm", virtual=True) as proxy:
        yield proxy.tcti


def run(capsys, *argv) -> dict:
    assert main(["tpm2", "pqc", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sign_and_verify_with_the_cli(tcti, tmp_path, capsys):
    key = run(capsys, "createprimary", "--tcti", tcti, "--alg", "ML-DSA-65", "--public-out",
              str(tmp_path / "k.pub"))
    assert key["algorithm"] == "ML-DSA-65" and key["public_key_bytes"] == 1952
    (tmp_path / "msg").write_bytes(b"hello pqc")
    sig = run(capsys, "sign-digest", "--tcti", tcti, "--key", key["handle"], "--message", str(tmp_path / "msg"),
              "--signature-out", str(tmp_path / "msg.sig"))
    assert sig["signature_bytes"] == 3309
    public = (tmp_path / "k.pub").read_bytes()
    pk = mldsa.MLDSA65PublicKey.from_public_bytes(public[-1952:])
    pk.verify((tmp_path / "msg.sig").read_bytes(), b"hello pqc")
    out = run(capsys, "verify-digest", "--tcti", tcti, "--key", key["handle"], "--message",
              str(tmp_path / "msg"), "--signature", str(tmp_path / "msg.sig"))
    assert out == {"tpm_verified": True, "tpm_rc": "0x0", "cryptography_verified": True}
    (tmp_path / "msg").write_bytes(b"tampered")
    assert main(["tpm2", "pqc", "verify-digest", "--tcti", tcti, "--key", key["handle"], "--message",
                 str(tmp_path / "msg"), "--signature", str(tmp_path / "msg.sig")]) == 1
    capsys.readouterr()


def test_a_255_byte_context_signs_and_verifies(tcti, tmp_path, capsys):
    """The FIPS 204 limit itself (255 bytes, here 127 'é' and one 'x') is accepted, and cryptography agrees."""
    key = run(capsys, "createprimary", "--tcti", tcti, "--alg", "ML-DSA-44", "--public-out", str(tmp_path / "k.pub"))
    (tmp_path / "msg").write_bytes(b"m")
    context = "é" * 127 + "x"
    run(capsys, "sign-digest", "--tcti", tcti, "--key", key["handle"], "--message", str(tmp_path / "msg"),
        "--context", context, "--signature-out", str(tmp_path / "s"))
    pk = mldsa.MLDSA44PublicKey.from_public_bytes((tmp_path / "k.pub").read_bytes()[-1312:])
    pk.verify((tmp_path / "s").read_bytes(), b"m", context.encode())
    out = run(capsys, "verify-digest", "--tcti", tcti, "--key", key["handle"], "--message", str(tmp_path / "msg"),
              "--context", context, "--signature", str(tmp_path / "s"))
    assert out["tpm_verified"] and out["cryptography_verified"]
    run(capsys, "flush", "--tcti", tcti, "--key", key["handle"])


def test_quote_with_the_cli(tcti, tmp_path, capsys):
    key = run(capsys, "createprimary", "--tcti", tcti, "--alg", "ML-DSA-44", "--no-external-mu")
    out = run(capsys, "quote", "--tcti", tcti, "--key", key["handle"], "--pcrs", "0,7", "--qualifying", "ab",
              "--attest-out", str(tmp_path / "q"))
    assert out["cryptography_verified"] is True and out["signature_bytes"] == 2420
    assert (tmp_path / "q").read_bytes()[:6] == bytes.fromhex("ff5443478018")
    run(capsys, "flush", "--tcti", tcti, "--key", key["handle"])


def test_create_load_and_kem_with_the_cli(tcti, tmp_path, capsys):
    from trustlab.devices.tpm2.pqc.client import PqcClient

    with PqcClient.connect(tcti) as tpm:
        srk = tpm.create_storage_primary()
    run(capsys, "create", "--tcti", tcti, "--parent", hex(srk), "--alg", "ML-KEM-768", "--key-auth", "pw",
        "--private-out", str(tmp_path / "k.priv"), "--public-out", str(tmp_path / "k.pub"))
    key = run(capsys, "load", "--tcti", tcti, "--parent", hex(srk), "--private", str(tmp_path / "k.priv"),
              "--public", str(tmp_path / "k.pub"))
    enc = run(capsys, "encapsulate", "--tcti", tcti, "--key", key["handle"], "--ciphertext-out",
              str(tmp_path / "ct"))
    dec = run(capsys, "decapsulate", "--tcti", tcti, "--key", key["handle"], "--ciphertext", str(tmp_path / "ct"),
              "--key-auth", "pw")
    assert dec["shared_secret"] == enc["shared_secret"] and enc["ciphertext_bytes"] == 1088
    run(capsys, "flush", "--tcti", tcti, "--key", key["handle"])


def test_cli_errors_are_one_line(tcti, tmp_path, capsys):
    from trustlab.devices.tpm2.pqc.client import PqcClient

    assert main(["tpm2", "pqc", "decapsulate", "--tcti", tcti, "--key", "0x80ffff00", "--ciphertext",
                 str(tmp_path / "missing")]) == 2
    assert "cannot read ciphertext: no such file" in capsys.readouterr().err
    assert main(["tpm2", "pqc", "encapsulate", "--tcti", tcti, "--key", "0x80ffff00"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TPM2_Encapsulate: TPM returned 0x18b (TPM_RC_HANDLE, handle 1)" in err
    assert main(["tpm2", "pqc", "createprimary", "--tcti", "swtpm:port=1", "--alg", "ML-DSA-44"]) == 2
    assert "cannot connect" in capsys.readouterr().err
    with PqcClient.connect(tcti) as tpm:  # a 1.85 TPM lists its eight commands: no "does not implement" hint
        assert tpm.pqc_commands() == frozenset(range(0x1A3, 0x1AB))
    assert main(["tpm2", "pqc", "createprimary", "--tcti", tcti, "--alg", "ML-DSA-44", "--hash", "sha256",
                 "--no-external-mu", "--hierarchy", "null", "--hierarchy-auth", "wrong"]) == 2
    assert "post-quantum commands" not in capsys.readouterr().err


def test_measure_writes_rows_fit_reads(tcti, tmp_path, capsys):
    out = tmp_path / "pqc.csv"
    assert main(["tpm2", "pqc", "measure", "--tcti", tcti, "--alg", "ML-DSA-44", "--alg", "ML-KEM-768",
                 "--repeat", "2", "--out", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["command"], r["variant"]) for r in rows} == {
        ("TPM2_CreatePrimary", "mldsa44"), ("TPM2_SignDigest", "mldsa44"), ("TPM2_VerifyDigestSignature", "mldsa44"),
        ("TPM2_CreatePrimary", "mlkem768"), ("TPM2_Encapsulate", "mlkem768"), ("TPM2_Decapsulate", "mlkem768")}
    assert all(r["n"] == 2 and r["ms"] > 0 for r in rows)
    assert out.read_text().splitlines()[0].startswith("command,variant,ms")


def test_context_files_carry_keys_between_invocations(tcti, tmp_path, capsys):
    key = run(capsys, "createprimary", "--tcti", tcti, "--alg", "ML-KEM-768", "--context-out",
              str(tmp_path / "kem.ctx"))
    run(capsys, "flush", "--tcti", tcti, "--key", key["handle"])  # as a resource manager would at exit
    enc = run(capsys, "encapsulate", "--tcti", tcti, "--key", str(tmp_path / "kem.ctx"), "--ciphertext-out",
              str(tmp_path / "ct"))
    dec = run(capsys, "decapsulate", "--tcti", tcti, "--key", str(tmp_path / "kem.ctx"), "--ciphertext",
              str(tmp_path / "ct"))
    assert dec["shared_secret"] == enc["shared_secret"]
    assert main(["tpm2", "pqc", "encapsulate", "--tcti", tcti, "--key", str(tmp_path / "nothing.ctx")]) == 2
    assert "cannot read key context: no such file" in capsys.readouterr().err
    forged = bytearray((tmp_path / "kem.ctx").read_bytes())
    forged[-1] ^= 1  # the context blob's last byte: its integrity HMAC no longer matches
    (tmp_path / "forged.ctx").write_bytes(bytes(forged))
    assert main(["tpm2", "pqc", "encapsulate", "--tcti", tcti, "--key", str(tmp_path / "forged.ctx")]) == 2
    err = capsys.readouterr().err  # named as tpm2_rc_decode tells it: 'tpm:parameter(1):integrity check failed'
    assert err.count("\n") == 1 and "TPM returned 0x1df (TPM_RC_INTEGRITY, parameter 1)" in err, err
    whole = (tmp_path / "kem.ctx").read_bytes()
    for name, data, said in (
            ("extra.ctx", whole + b"\0", f"1 extra byte(s) at byte offset {len(whole)}"),
            ("empty.ctx", b"", "empty (0 bytes"),
            ("short.ctx", whole[:-1], f"cut short at byte offset {len(whole) - 1}"),
            ("header.ctx", whole[:10], "10 bytes, cut short at byte offset 10")):
        (tmp_path / name).write_bytes(data)
        assert main(["tpm2", "pqc", "encapsulate", "--tcti", tcti, "--key", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--key {tmp_path / name}: not a key context: {said}" in err, err


def test_trustlab_serve_answers_the_pqc_commands(tmp_path):
    """The real ``trustlab serve`` process (virtual mode, free ports) runs the PQC commands and traces them."""
    import os
    import signal
    import subprocess
    import sys

    from trustlab.devices.tpm2.pqc.client import PqcClient, external_mu, public_key

    trace = tmp_path / "trace.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from trustlab.cli import main; sys.exit(main())",
                             "serve", "--profile", "sealsq-qvault-pqc-tpm-wolftpm", "--port", "0", "--virtual",
                             "--trace", str(trace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        tcti = None
        for _ in range(20):
            line = proc.stdout.readline()
            if line.startswith("TPM2TOOLS_TCTI="):
                tcti = line.strip().split("=", 1)[1]
                break
        assert tcti, proc.stderr.read() if proc.poll() is not None else "no TCTI line"
        with PqcClient.connect(tcti) as tpm:
            key = tpm.create_primary("ML-DSA-65")
            sig = tpm.sign_digest(key.handle, external_mu(key.public.unique, b"served"))
            public_key(key.public).verify(sig, b"served")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    signed = [x for x in lines if x["command"] == "TPM2_SignDigest"]
    assert signed and signed[0]["variant"] == "mldsa65" and signed[0]["modelled_ms"] > 0


def test_outputs_need_force_and_context_needs_a_hash_key_with_digest(tcti, tmp_path, capsys):
    """Issue 23: an existing output is replaced only with --force (unlike tpm2-tools, which replaces it);
    --context with --digest on a pure ML-DSA key (whose digest is the external mu) is an error, not ignored."""
    key = run(capsys, "createprimary", "--tcti", tcti, "--alg", "ML-DSA-44")
    (tmp_path / "s").write_bytes(b"precious")
    sign = ["tpm2", "pqc", "sign-digest", "--tcti", tcti, "--key", key["handle"], "--digest", "00" * 64]
    assert main(sign + ["--signature-out", str(tmp_path / "s")]) == 2
    assert "exists; pass --force" in capsys.readouterr().err and (tmp_path / "s").read_bytes() == b"precious"
    assert main(sign + ["--signature-out", str(tmp_path / "s"), "--force"]) == 0
    assert len((tmp_path / "s").read_bytes()) == 2420
    capsys.readouterr()
    assert main(sign + ["--context", "app"]) == 2
    assert "--context: with --digest, applies only to a HashML-DSA key" in capsys.readouterr().err
    run(capsys, "flush", "--tcti", tcti, "--key", key["handle"])


def _examples(text: str) -> tuple[str, list[list[str]]]:
    """The serve profile and the ``trustlab tpm2 pqc`` commands of a text's example block, as written."""
    import re
    import shlex

    profile = re.search(r"trustlab serve --profile (\S+) --port 2321 &", text).group(1)
    block = text[text.index(f"--profile {profile} --port 2321 &"):].split("\n\n", 1)[0]
    return profile, [shlex.split(line.split("trustlab ", 1)[1])[2:] for line in block.splitlines()
                     if "trustlab tpm2 pqc " in line]


@pytest.mark.parametrize("where", ["README.md", "trustlab tpm2 pqc --help"])
def test_the_documented_pqc_flow_runs_whole_on_its_profile(where, tmp_path, monkeypatch, capsys):
    """The README's and --help's example, each command as written (the TCTI: a free port), on the profile they
    name: every step succeeds (on a 2048-byte chip the first answered TPM_RC_SIZE)."""
    from pathlib import Path

    from trustlab.cli import tpm2 as cli_tpm2

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8") \
        if where == "README.md" else cli_tpm2.__doc__
    profile, steps = _examples(text)
    assert [s[0] for s in steps] == ["createprimary", "sign-digest", "verify-digest"], steps
    monkeypatch.chdir(tmp_path)
    (tmp_path / "msg.bin").write_bytes(b"hello\n")
    with timed_swtpm(profile, virtual=True) as proxy:
        for step in steps:
            assert main(["tpm2", "pqc", *step, "--tcti", proxy.tcti]) == 0, (step, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "tpm_verified: True" in out and "cryptography_verified: True" in out
