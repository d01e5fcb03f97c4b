"""The log-based scheme ported to TPM 2.0, on swtpm (libtpms) behind the timing proxy.

TPM 2.0 has no transport sessions; its equivalents are used:

* the physical counter is an NV index of type TPM_NT_COUNTER (global clock);
* INCREMENT(c, n): a fresh HMAC session with the *audit* attribute covers
  TPM2_NV_Increment and TPM2_NV_Read (so the audited response carries the new
  value); TPM2_GetSessionAuditDigest then signs, with the attestation key,
  TPMS_ATTEST(type SESSION_AUDIT, extraData = SHA-256("VC-INC" || c || n),
  sessionDigest, exclusiveSession). The verifier recomputes the audit digest
  from cpHash/rpHash of exactly those two commands (any other command in the
  session changes it) and requires ``exclusiveSession`` - TPM 2.0's version of
  the exclusive transport session: no command ran outside the session since.
* READ(c, n): TPM2_NV_Certify signs TPMS_ATTEST(type NV, extraData =
  SHA-256("VC-READ" || c || n), nvContents = the counter) - the current-clock
  certificate; the host adds the increment certificates since c's last one,
  checked for contiguity exactly as on TPM 1.2.

Time is what the proxy models for each command on the chosen TPM 2.0 profile
(``virtual=True``: nothing sleeps), so the scheme runs on the TPM code that
ships in today's machines at the speed of the profiled chip.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils

from trustlab.apps.counters.base import Answer, VerificationError, check_incremented, check_log_read
from trustlab.errors import TrustlabError
from trustlab.timing.profile import Profile

NV_INDEX = 0x01500020
CC_NV_INCREMENT = 0x00000134
CC_NV_READ = 0x0000014E
TPM_GENERATED = 0xFF544347
ST_ATTEST_NV = 0x8014
ST_ATTEST_SESSION_AUDIT = 0x8016
_TAGS = {"increment": b"trustlab-vc2-increment\x00", "read": b"trustlab-vc2-read\x00"}


def qualifying(kind: str, counter: int, nonce: bytes) -> bytes:
    return hashlib.sha256(_TAGS[kind] + struct.pack(">Q", counter) + nonce).digest()


def _h(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def audit_digest(nv_name: bytes, value: int) -> bytes:
    """The session audit digest after NV_Increment then NV_Read(8, 0) on the counter."""
    ok = struct.pack(">I", 0)
    inc_cp = _h(struct.pack(">I", CC_NV_INCREMENT), nv_name, nv_name)
    inc_rp = _h(ok, struct.pack(">I", CC_NV_INCREMENT))
    read_cp = _h(struct.pack(">I", CC_NV_READ), nv_name, nv_name, struct.pack(">HH", 8, 0))
    read_rp = _h(ok, struct.pack(">I", CC_NV_READ), struct.pack(">HQ", 8, value))
    d = b"\x00" * 32
    for cp, rp in ((inc_cp, inc_rp), (read_cp, read_rp)):
        d = _h(d, cp, rp)
    return d


@dataclass(frozen=True)
class Attested:
    """A signed TPMS_ATTEST and what the host claims it says."""

    kind: str
    counter: int
    nonce: bytes
    value: int
    attest: bytes
    signature: bytes  # DER ECDSA


@dataclass(frozen=True)
class ReadEvidence2:
    clock: Attested
    own: Attested | None
    since: tuple[Attested, ...]


def _parse_attest(blob: bytes) -> tuple[int, bytes, bytes]:
    """(type, extraData, attested bytes) of a TPMS_ATTEST; raises VerificationError."""
    try:
        magic, typ = struct.unpack(">IH", blob[:6])
        pos = 6
        (n,) = struct.unpack(">H", blob[pos:pos + 2])
        pos += 2 + n  # qualifiedSigner
        (n,) = struct.unpack(">H", blob[pos:pos + 2])
        extra = blob[pos + 2:pos + 2 + n]
        pos += 2 + n
        pos += 17 + 8  # TPMS_CLOCK_INFO (8+4+4+1) and firmwareVersion
        if magic != TPM_GENERATED:
            raise VerificationError("bad-attest", "not TPM-generated (magic)")
        return typ, extra, blob[pos:]
    except struct.error:
        raise VerificationError("bad-attest", "truncated TPMS_ATTEST") from None


class Tpm2LogVerifier:
    """Knows the attestation key's public key, the counter's NV name and its start value."""

    def __init__(self, ak_public: ec.EllipticCurvePublicKey, nv_name: bytes, genesis: int) -> None:
        self.ak_public, self.nv_name, self.genesis = ak_public, nv_name, genesis

    def _signed(self, cert: Attested, kind: str, counter: int, nonce: bytes | None) -> bytes:
        if cert.kind != kind:
            raise VerificationError("wrong-kind", f"expected {kind}, got {cert.kind}")
        if cert.counter != counter:
            raise VerificationError("wrong-counter", f"certificate is for counter {cert.counter}, not {counter}")
        if nonce is not None and cert.nonce != nonce:
            raise VerificationError("bad-nonce", "certificate answers another challenge (replay?)")
        try:
            self.ak_public.verify(cert.signature, cert.attest, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise VerificationError("bad-signature", "attestation key signature does not verify") from None
        typ, extra, attested = _parse_attest(cert.attest)
        if extra != qualifying(kind, cert.counter, cert.nonce):
            raise VerificationError("bad-nonce", "signed qualifying data does not bind this counter and nonce")
        if kind == "increment":
            if typ != ST_ATTEST_SESSION_AUDIT or len(attested) < 1 + 2 + 32:
                raise VerificationError("bad-attest", "not a session-audit attestation")
            exclusive, (n,) = attested[0], struct.unpack(">H", attested[1:3])
            if not exclusive:
                raise VerificationError("not-exclusive", "another command ran outside the audit session")
            if attested[3:3 + n] != audit_digest(self.nv_name, cert.value):
                raise VerificationError("bad-log", f"audit digest is not NV_Increment + NV_Read = {cert.value}")
        else:
            if typ != ST_ATTEST_NV:
                raise VerificationError("bad-attest", "not an NV attestation")
            (n,) = struct.unpack(">H", attested[:2])
            name, rest = attested[2:2 + n], attested[2 + n:]
            if name != self.nv_name:
                raise VerificationError("wrong-counter", "attestation is for another NV index")
            (_off, m) = struct.unpack(">HH", rest[:4])
            if rest[4:4 + m] != struct.pack(">Q", cert.value):
                raise VerificationError("value-mismatch", "NV contents differ from the claimed value")
        return attested

    def check_increment(self, answer: Answer, counter: int, nonce: bytes, after: int | None = None) -> int:
        cert = answer.evidence
        if not isinstance(cert, Attested):
            raise VerificationError("bad-evidence", "not an increment certificate")
        self._signed(cert, "increment", counter, nonce)
        return check_incremented(answer.value, cert.value, after)

    def check_read(self, answer: Answer, counter: int, nonce: bytes) -> int:
        ev = answer.evidence
        if not isinstance(ev, ReadEvidence2):
            raise VerificationError("bad-evidence", "not a read attestation")
        self._signed(ev.clock, "read", counter, nonce)
        x = self.genesis
        if ev.own is not None:
            self._signed(ev.own, "increment", counter, None)
            x = ev.own.value
        return check_log_read(answer.value, x, ev.clock.value, ev.since, counter,
                              lambda c: self._signed(c, "increment", c.counter, None))


class Tpm2LogProver:
    """The buyer's device with a TPM 2.0: a fresh swtpm behind a virtual-time proxy.

    Use as a context manager; ``clock`` is the proxy's clock (modelled ms).
    """

    scheme = "log-tpm2"

    def __init__(self, profile: Profile, counters: int) -> None:
        try:
            from tpm2_pytss import ESAPI, TCTILdr
        except ImportError as exc:  # pragma: no cover - tpm2-pytss is a dependency
            raise TrustlabError(f"tpm2-pytss is needed for the TPM 2.0 scheme: {exc}") from None
        from trustlab.serving.proxy import TimingProxy
        from trustlab.serving.swtpm import Swtpm

        self.counters = counters
        self._swtpm = Swtpm()
        self._swtpm.__enter__()
        try:
            self.proxy = TimingProxy(profile, self._swtpm, virtual=True)
            self._tcti = TCTILdr("swtpm", self.proxy.tcti_conf)
            self.esys = ESAPI(self._tcti)
            self._setup()
        except BaseException:
            self.close()
            raise
        self.clock = self.proxy.clock
        self.certs: dict[int, Attested] = {}
        self.last: dict[int, int] = {}

    def _setup(self) -> None:
        from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_NT, TPMA_NV, TPMA_OBJECT
        from tpm2_pytss.types import TPM2B_NV_PUBLIC, TPM2B_PUBLIC, TPM2B_SENSITIVE_CREATE, TPMS_NV_PUBLIC

        e = self.esys
        attrs = (TPM2_NT.COUNTER << TPMA_NV.TPM2_NT_SHIFT) | TPMA_NV.AUTHWRITE | TPMA_NV.AUTHREAD | TPMA_NV.NO_DA
        self.nv = e.nv_define_space(b"", TPM2B_NV_PUBLIC(nvPublic=TPMS_NV_PUBLIC(
            nvIndex=NV_INDEX, nameAlg=TPM2_ALG.SHA256, attributes=attrs, dataSize=8)))
        e.nv_increment(self.nv)  # a counter index must be written once before it can be read
        self.genesis = struct.unpack(">Q", bytes(e.nv_read(self.nv, 8)))[0]
        self.nv_name = bytes(e.tr_get_name(self.nv))
        tmpl = TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256", objectAttributes=(
            TPMA_OBJECT.RESTRICTED | TPMA_OBJECT.SIGN_ENCRYPT | TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT
            | TPMA_OBJECT.SENSITIVEDATAORIGIN | TPMA_OBJECT.USERWITHAUTH))
        tmpl.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG.NULL
        self.ak, ak_pub, *_ = e.create_primary(TPM2B_SENSITIVE_CREATE(), tmpl, ESYS_TR.ENDORSEMENT)
        point = ak_pub.publicArea.unique.ecc
        self.ak_public = ec.EllipticCurvePublicNumbers(
            int.from_bytes(bytes(point.x), "big"), int.from_bytes(bytes(point.y), "big"), ec.SECP256R1()).public_key()

    def verifier(self) -> Tpm2LogVerifier:
        return Tpm2LogVerifier(self.ak_public, self.nv_name, self.genesis)

    @staticmethod
    def _der(sig) -> bytes:
        e = sig.signature.ecdsa
        return utils.encode_dss_signature(int.from_bytes(bytes(e.signatureR), "big"),
                                          int.from_bytes(bytes(e.signatureS), "big"))

    def _check(self, counter: int) -> None:
        if not 0 <= counter < self.counters:
            raise VerificationError("no-such-counter", f"counter {counter} outside 0..{self.counters - 1}")

    def increment(self, counter: int, nonce: bytes) -> Answer:
        from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_SE, TPMA_SESSION
        from tpm2_pytss.types import TPMT_SYM_DEF

        self._check(counter)
        e = self.esys
        sess = e.start_auth_session(ESYS_TR.NONE, ESYS_TR.NONE, TPM2_SE.HMAC,
                                    TPMT_SYM_DEF(algorithm=TPM2_ALG.NULL), TPM2_ALG.SHA256)
        try:
            e.trsess_set_attributes(sess, TPMA_SESSION.AUDIT | TPMA_SESSION.CONTINUESESSION)
            e.nv_increment(self.nv, session2=sess)
            value = struct.unpack(">Q", bytes(e.nv_read(self.nv, 8, session2=sess)))[0]
            attest, sig = e.get_session_audit_digest(self.ak, sess, qualifying("increment", counter, nonce))
        finally:
            e.flush_context(sess)
        cert = Attested("increment", counter, nonce, value, bytes(attest), self._der(sig))
        self.certs[value] = cert
        self.last[counter] = value
        return Answer(counter, value, cert, nonce)

    def read(self, counter: int, nonce: bytes) -> Answer:
        from tpm2_pytss.constants import TPM2_ALG
        from tpm2_pytss.types import TPMT_SIG_SCHEME

        self._check(counter)
        attest, sig = self.esys.nv_certify(self.ak, self.nv, qualifying("read", counter, nonce),
                                           TPMT_SIG_SCHEME(scheme=TPM2_ALG.NULL), 8)
        raw = bytes(attest)
        value = struct.unpack(">Q", raw[-8:])[0]
        clock = Attested("read", counter, nonce, value, raw, self._der(sig))
        x = self.last.get(counter)
        start = x if x is not None else self.genesis
        since = tuple(self.certs[v] for v in range(start + 1, value + 1))
        own = self.certs[x] if x is not None else None
        return Answer(counter, start, ReadEvidence2(clock, own, since), nonce)

    def updates_since(self, counter: int) -> int:
        top = max(self.certs, default=self.genesis)
        return top - self.last.get(counter, self.genesis)

    def close(self) -> None:
        for closer in (lambda: self.esys.close(), lambda: self._tcti.close() if hasattr(self._tcti, "close") else None,
                       lambda: self.proxy.stop(), lambda: self._swtpm.__exit__(None, None, None)):
            try:
                closer()
            except Exception:  # noqa: BLE001 - best-effort teardown of a half-built device
                pass

    def __enter__(self) -> "Tpm2LogProver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
