"""The log-based scheme on TPM 2.0 (swtpm behind the timing proxy)."""

import dataclasses
import os
import shutil

import pytest

from trustlab.apps.counters.base import Answer, VerificationError
from trustlab.timing import registry

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]


@pytest.fixture(scope="module")
def device():
    from trustlab.apps.counters.tpm2_log import Tpm2LogProver

    with Tpm2LogProver(registry.load("infineon-slb9672-wolftpm"), 4) as p:
        yield p, p.verifier()


def test_increments_and_reads_verify_and_are_timed(device):
    p, v = device
    for c in (0, 1, 0, 2):
        n = os.urandom(20)
        before = p.clock.now_ms
        a = p.increment(c, n)
        assert v.check_increment(a, c, n) == a.value
        assert p.clock.now_ms > before  # modelled by the proxy for the profiled chip
    n = os.urandom(20)
    a = p.read(1, n)
    assert v.check_read(a, 1, n) == p.last[1]
    assert len(a.evidence.since) == 2  # counter 0 then 2 incremented after counter 1
    n = os.urandom(20)
    assert v.check_read(p.read(3, n), 3, n) == p.genesis  # never incremented


def test_tampering_rejected(device):
    p, v = device
    n = os.urandom(20)
    a = p.increment(1, n)
    with pytest.raises(VerificationError, match="bad-nonce"):
        v.check_increment(a, 1, os.urandom(20))
    with pytest.raises(VerificationError, match="wrong-counter"):
        v.check_increment(a, 2, n)
    forged = dataclasses.replace(a.evidence, value=a.value + 1)
    with pytest.raises(VerificationError, match="bad-log"):
        v.check_increment(Answer(1, a.value + 1, forged, n), 1, n)
    sig = bytearray(a.evidence.signature)
    sig[-1] ^= 1
    with pytest.raises(VerificationError, match="bad-signature"):
        v.check_increment(Answer(1, a.value, dataclasses.replace(a.evidence, signature=bytes(sig)), n), 1, n)
    p.increment(0, os.urandom(20))
    n = os.urandom(20)
    r = p.read(1, n)
    dropped = dataclasses.replace(r.evidence, since=r.evidence.since[:-1])
    with pytest.raises(VerificationError, match="log-gap"):
        v.check_read(Answer(1, r.value, dropped, n), 1, n)


def test_audit_session_must_be_exclusive(device):
    """A command outside the audit session between the audited ones clears exclusiveSession."""
    from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_SE, TPMA_SESSION
    from tpm2_pytss.types import TPMT_SYM_DEF

    from trustlab.apps.counters.tpm2_log import Attested, qualifying

    p, v = device
    e = p.esys
    sess = e.start_auth_session(ESYS_TR.NONE, ESYS_TR.NONE, TPM2_SE.HMAC, TPMT_SYM_DEF(algorithm=TPM2_ALG.NULL),
                                TPM2_ALG.SHA256)
    e.trsess_set_attributes(sess, TPMA_SESSION.AUDIT | TPMA_SESSION.CONTINUESESSION)
    e.nv_increment(p.nv, session2=sess)
    e.get_random(8)  # outside the session
    value = int.from_bytes(bytes(e.nv_read(p.nv, 8, session2=sess)), "big")
    n = os.urandom(20)
    att, sig = e.get_session_audit_digest(p.ak, sess, qualifying("increment", 2, n))
    e.flush_context(sess)
    cert = Attested("increment", 2, n, value, bytes(att), p._der(sig))
    with pytest.raises(VerificationError, match="not-exclusive"):
        v.check_increment(Answer(2, value, cert, n), 2, n)
