"""Must-show: unmodified tpm2-tools and tpm2-pytss through the proxy, in realtime.

A create-primary / create / load / sign / NV-counter session runs through the
timing proxy; every command is modelled (none falls back), the counter really
counts, and each command's wall time matches the profile's modelled time.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time

import pytest
from tpm2_pytss import ESAPI, TCTILdr
from tpm2_pytss.constants import TPM2_ALG, TPMA_NV, TPMA_OBJECT
from tpm2_pytss.types import TPM2B_NV_PUBLIC, TPM2B_PUBLIC, TPMS_NV_PUBLIC, TPMT_SIG_SCHEME

from trustlab.serving.proxy import TimingProxy

from .conftest import make_profile, needs_swtpm

pytestmark = needs_swtpm

# Slower than swtpm for every command, so the proxy always has time to hold.
PROFILE = make_profile("realtime-test", ohc=4.0, ohir=0.005, ohor=0.005, sha256_byte=0.001, hmac=1.0,
                       ecc256_keygen=25.0, ecc256_sign=20.0, ecc256_verify=22.0, nv_write=10.0,
                       nv_increment=8.0)


@pytest.mark.skipif(shutil.which("tpm2_createprimary") is None, reason="tpm2-tools not installed")
@pytest.mark.realtime
def test_tpm2_tools_session_through_serve(swtpm, tmp_path):
    with TimingProxy(PROFILE, swtpm) as proxy:
        env = dict(os.environ, TPM2TOOLS_TCTI=f"swtpm:port={proxy.port}", TSS2_LOG="all+NONE")

        def tool(*argv: str) -> str:
            out = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, f"{argv[0]} failed: {out.stderr}"
            # no resource manager between the tools and the TPM: free transient slots as a user would
            subprocess.run(["tpm2_flushcontext", "-t"], env=env, cwd=tmp_path, capture_output=True, timeout=60)
            return out.stdout

        (tmp_path / "msg").write_text("trustlab")
        tool("tpm2_createprimary", "-C", "o", "-G", "ecc256", "-c", "primary.ctx")
        tool("tpm2_create", "-C", "primary.ctx", "-G", "ecc256", "-u", "key.pub", "-r", "key.priv")
        tool("tpm2_load", "-C", "primary.ctx", "-u", "key.pub", "-r", "key.priv", "-c", "key.ctx")
        tool("tpm2_sign", "-c", "key.ctx", "-g", "sha256", "-o", "sig.bin", "msg")
        tool("tpm2_verifysignature", "-c", "key.ctx", "-g", "sha256", "-m", "msg", "-s", "sig.bin")
        tool("tpm2_nvdefine", "-C", "o", "-s", "8", "-a", "nt=counter|ownerread|ownerwrite", "0x1500020")
        tool("tpm2_nvincrement", "-C", "o", "0x1500020")
        tool("tpm2_nvincrement", "-C", "o", "0x1500020")
        first = tool("tpm2_nvread", "-C", "o", "-s", "8", "0x1500020", "-o", "c1")
        tool("tpm2_nvincrement", "-C", "o", "0x1500020")
        tool("tpm2_nvread", "-C", "o", "-s", "8", "0x1500020", "-o", "c2")
        del first
        c1 = int.from_bytes((tmp_path / "c1").read_bytes(), "big")
        c2 = int.from_bytes((tmp_path / "c2").read_bytes(), "big")
        assert c2 == c1 + 1
        records = list(proxy.records)
    names = {r.command for r in records}
    assert {"TPM2_CreatePrimary", "TPM2_Create", "TPM2_Load", "TPM2_Sign", "TPM2_VerifySignature",
            "TPM2_NV_DefineSpace", "TPM2_NV_Increment", "TPM2_NV_Read"} <= names
    signs = [r for r in records if r.command == "TPM2_Sign" and r.rc == 0]
    assert signs and all(r.variant == "ecc256" and "ecc256_sign" in r.breakdown for r in signs)
    keygens = [r for r in records if r.command in ("TPM2_CreatePrimary", "TPM2_Create") and r.rc == 0]
    assert all(r.breakdown.get("ecc256_keygen") == 25.0 for r in keygens)
    incs = [r for r in records if r.command == "TPM2_NV_Increment"]
    assert len(incs) == 3 and all(r.breakdown["nv_increment"] == 8.0 for r in incs)
    # every response was due its modelled time after its last request byte, never less (at
    # the proxy; each tool's process start-up competes for the 2 shared cores, so the backend
    # is sometimes slower than the model - client-side accuracy is judged in the pytss test below)
    errs = [r.served_ms - r.modelled_ms for r in records]
    assert min(errs) > -1e-6 and statistics.median(errs) < 1.0, errs
    assert all(r.rm_ms > 0 for r in records if r.command == "TPM2_Sign")  # the key is loaded by the RM


@pytest.mark.realtime
def test_pytss_session_wall_time_matches_profile(swtpm):
    """Client-side wall time of each command vs the profile, realtime mode.

    What a client sees is the modelled time plus its own work around the call
    (marshalling, a TCP connect per command in tcti-swtpm), which the proxy
    cannot hold back. So every command is issued twice in a row, once with
    the proxy in virtual mode (its wall time minus swtpm's own time is the
    client's overhead right now) and once in realtime mode; the realtime
    error is judged net of that paired overhead: per command, the median of
    |wall - modelled - overhead| is under 2 ms, and no response ever arrives
    before its modelled time. The machine is shared (2 cores, several suites
    at once), so a missed round is retried, up to three rounds.
    """
    failures = []
    for _attempt in range(3):
        errors, earliest = _pytss_session(swtpm)
        worst = {k: statistics.median([abs(e) for e in v]) for k, v in errors.items()}
        if earliest > -0.1 and max(worst.values()) < 2.0:
            return
        failures.append(f"earliest {earliest:.2f} ms; median |error| per command {worst}")
    pytest.fail("realtime accuracy missed in 3 rounds: " + " | ".join(failures))


def _pytss_session(swtpm) -> tuple[dict[str, list[float]], float]:
    """Per command: realtime (wall - modelled) minus the paired virtual (wall - backend); earliest excess."""
    index = 0x01500030 + getattr(swtpm, "_test_rounds", 0)
    swtpm._test_rounds = index - 0x01500030 + 1
    with TimingProxy(PROFILE, swtpm) as proxy, ESAPI(TCTILdr("swtpm", proxy.tcti_conf)) as esys:
        scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA)
        scheme.details.any.hashAlg = TPM2_ALG.SHA256
        nv_public = TPM2B_NV_PUBLIC(TPMS_NV_PUBLIC(
            nvIndex=index, nameAlg=TPM2_ALG.SHA256, dataSize=8,
            attributes=TPMA_NV.OWNERWRITE | TPMA_NV.OWNERREAD | TPMA_NV.AUTHWRITE | TPMA_NV.AUTHREAD
            | TPMA_NV.NO_DA | (0x1 << 4)))
        template = TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256", objectAttributes=(
            TPMA_OBJECT.SIGN_ENCRYPT | TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.SENSITIVEDATAORIGIN
            | TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT))
        parent_template = TPM2B_PUBLIC.parse(  # parsed once: the parsing is not the TPM's time
            "ecc256:aes128cfb", objectAttributes=TPMA_OBJECT.DEFAULT_TPM2_TOOLS_CREATEPRIMARY_ATTRS)
        errors: dict[str, list[float]] = {}
        excesses: list[float] = []

        def once(name: str, fn, virtual: bool):
            proxy.virtual = virtual
            n = len(proxy.records)
            t0 = time.perf_counter()
            out = fn()
            wall = (time.perf_counter() - t0) * 1000.0
            recs = proxy.records[n:]
            # one command per call; libtpms may answer TPM_RC_RETRY and ESAPI then re-sends it
            assert {r.command for r in recs} == {name} and all(r.rc == 0x922 for r in recs[:-1]), recs
            return out, wall - sum(r.backend_ms if virtual else r.modelled_ms for r in recs)

        def timed(name: str, fn, undo=None):
            """Virtual then realtime (``undo`` reverts the first call's effect in between)."""
            out, overhead = once(name, fn, virtual=True)
            if undo is not None:
                undo(out)
            out, excess = once(name, fn, virtual=False)
            excesses.append(excess)
            errors.setdefault(name, []).append(excess - overhead)
            return out

        def flush(handle):
            proxy.virtual = True
            esys.flush_context(handle)

        esys.get_random(8)  # the TSS's first call pays one-off set-up costs on the client side
        nv = esys.nv_define_space(b"", nv_public)
        for rep in range(4):
            if rep == 1:  # the first round warms the client's code paths; it is not judged
                errors.clear()
                excesses.clear()
            primary = timed("TPM2_CreatePrimary", lambda: esys.create_primary(None, parent_template)[0], flush)
            priv, pub, *_ = timed("TPM2_Create", lambda: esys.create(primary, None, template))
            key = timed("TPM2_Load", lambda: esys.load(primary, priv, pub), flush)
            timed("TPM2_Sign", lambda: esys.sign(key, b"\x01" * 32, scheme))
            timed("TPM2_NV_Increment", lambda: esys.nv_increment(nv))
            proxy.virtual = True
            esys.flush_context(key)
            esys.flush_context(primary)
        assert int.from_bytes(bytes(esys.nv_read(nv, 8)), "big") == 8  # the counter really counted
        assert all(not r.unmodelled for r in proxy.records)
    return errors, min(excesses)
