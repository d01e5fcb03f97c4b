"""The log-based virtual counters of Sarmenta et al., as the paper runs them (Sec. III-B1).

The TPM's one physical monotonic counter is a global clock; a virtual
counter's value is the physical value at its last INCREMENT.

*INCREMENT(c, n)*: in an exclusive, logged transport session the host runs
TPM_IncrementCounter, then TPM_ReleaseTransportSigned with the signing key over the
session's log digest and ``antiReplay = SHA1("VC-INC" || c || n)`` - the
counter ID and the merchant's nonce bound into the TPM's signature. The
resulting *increment certificate* records everything the verifier needs to
recompute the log digest itself: the session's establish parameters and
response, the increment's tick count, the release's ticks and the signature.

*READ(c, n)*: the same session shape around TPM_ReadCounter gives a
*current-clock certificate* (physical value T, bound to ``c`` and ``n``); the
host adds c's last increment certificate (value X) and the certificates of
every increment since, X+1 .. T. The verifier checks each certificate's
signature and log, their contiguity, that none of X+1 .. T is for ``c``, and
the fresh nonce - so the value X is proven.

Verification is stateless apart from a memo of certificates already found
valid (a pure function of their bytes; the modelled ``host_verify`` is still
charged for every certificate checked, as the paper's model counts them).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.apps.counters.base import Answer, VerificationError, check_incremented, check_log_read
from trustlab.apps.counters.device import COUNTER_LABEL, ProvisionedTpm
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.wire import Writer
from trustlab.timing.clock import Clock

INC, READ = "increment", "read"
_TAGS = {INC: b"trustlab-vc-increment\x00", READ: b"trustlab-vc-read\x00"}
_ORD = {INC: C.ORD["TPM_IncrementCounter"], READ: C.ORD["TPM_ReadCounter"]}
REQUIRED_ATTRIBUTES = C.TPM_TRANSPORT_LOG | C.TPM_TRANSPORT_EXCLUSIVE


def _sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def anti_replay(kind: str, counter: int, nonce: bytes) -> bytes:
    """The nonce the TPM signs: binds the virtual counter ID and the verifier's nonce."""
    return _sha1(_TAGS[kind], struct.pack(">Q", counter), nonce)


@dataclass(frozen=True)
class LogCert:
    """An increment certificate or a current-clock certificate (``kind``)."""

    kind: str
    counter: int          # virtual counter ID
    nonce: bytes          # the verifier's nonce
    value: int            # physical counter value the inner command returned
    establish_params: bytes
    establish_out: bytes
    inner_ticks: int
    release_ticks: bytes
    signature: bytes

    @property
    def size(self) -> int:
        """Bytes on the wire (the paper's Sh + Ss per certificate, plus the log fields)."""
        return 8 + len(self.nonce) + 4 + len(self.establish_params) + len(self.establish_out) + 8 \
            + len(self.release_ticks) + len(self.signature)


@dataclass(frozen=True)
class ReadEvidence:
    clock: LogCert
    own: LogCert | None
    since: tuple[LogCert, ...]

    @property
    def size(self) -> int:
        return self.clock.size + (self.own.size if self.own else 0) + sum(c.size for c in self.since)


class LogProver:
    """The buyer's device: untrusted host software driving its TPM."""

    scheme = "log"

    def __init__(self, dev: ProvisionedTpm, counters: int, transport_secret: bytes = b"\x5a" * 20) -> None:
        self.dev = dev
        self.counters = counters
        self._secret = transport_secret
        self.certs: dict[int, LogCert] = {}   # physical value -> increment certificate
        self.last: dict[int, int] = {}        # virtual counter -> physical value of its last increment
        self.genesis = dev.counter_start
        self.clock_value = dev.counter_start

    def _session(self, kind: str, counter: int, nonce: bytes) -> LogCert:
        if not 0 <= counter < self.counters:
            raise VerificationError("no-such-counter", f"counter {counter} outside 0..{self.counters - 1}")
        tpm, d = self.dev.tpm, self.dev
        # authorization sessions are opened before the exclusive session (any
        # command outside it would end it) and continued across operations
        aik_s = self._oiap("aik", d.aik_auth)
        ctr_s = self._oiap("counter", d.counter_auth) if kind == INC else None
        tr = tpm.TPM_EstablishTransport(self._secret, exclusive=True, logged=True)
        establish_params, establish_out = _establish_fields(self._secret, tr)
        establish_out += tr.nonce_even  # the response's nonceEven, before the session rolls it
        with tpm.through(tr):
            if kind == INC:
                value = tpm.TPM_IncrementCounter(d.counter_id, ctr_s)
            else:
                value = tpm.TPM_ReadCounter(d.counter_id)
        inner_ticks = tr.entries[-1].ticks_us
        rel = tpm.TPM_ReleaseTransportSigned(d.aik, anti_replay(kind, counter, nonce), tr, aik_s)
        return LogCert(kind, counter, nonce, value, establish_params, establish_out,
                       inner_ticks, rel.ticks, rel.signature)

    def _oiap(self, which: str, secret: bytes):
        """Continued OIAP sessions, reopened only after they close (as a TSS does)."""
        sessions = self.__dict__.setdefault("_oiap_sessions", {})
        s = sessions.get(which)
        if s is None or not s.open:
            s = sessions[which] = self.dev.tpm.TPM_OIAP(secret)
        return s

    def increment(self, counter: int, nonce: bytes) -> Answer:
        cert = self._session(INC, counter, nonce)
        self.certs[cert.value] = cert
        self.last[counter] = cert.value
        self.clock_value = cert.value
        return Answer(counter, cert.value, cert, nonce)

    def read(self, counter: int, nonce: bytes) -> Answer:
        clock_cert = self._session(READ, counter, nonce)
        x = self.last.get(counter)
        own = self.certs[x] if x is not None else None
        start = x if x is not None else self.genesis
        since = tuple(self.certs[v] for v in range(start + 1, clock_cert.value + 1))
        value = x if x is not None else self.genesis
        return Answer(counter, value, ReadEvidence(clock_cert, own, since), nonce)

    def updates_since(self, counter: int) -> int:
        """|Ut|: increments of other counters since this counter's last one."""
        return self.clock_value - self.last.get(counter, self.genesis)


def _establish_fields(secret: bytes, tr) -> tuple[bytes, bytes]:
    """The establish command's parameters and response parameters, as the log hashed them."""
    attrs = C.TPM_TRANSPORT_LOG | C.TPM_TRANSPORT_EXCLUSIVE
    params = Writer().u16(C.TPM_TAG_TRANSPORT_PUBLIC).u32(attrs).u32(0).u16(0).bytes() + Writer().sized(secret).bytes()
    ticks = L.current_ticks(tr.entries[0].ticks_us, tr.tick_nonce)
    return params, struct.pack(">I", 0) + ticks


class LogVerifier:
    """The merchant's side: knows only the AIK public key and the counter's identity."""

    def __init__(self, aik_public: rsa.RSAPublicKey, counter_id: int, genesis: int,
                 clock: Clock | None = None, label: bytes = COUNTER_LABEL) -> None:
        self.aik_public = aik_public
        self.counter_id = counter_id
        self.genesis = genesis
        self.label = label
        self.clock = clock
        self._valid: dict[LogCert, None] = {}

    # ---- one certificate --------------------------------------------------------
    def check_cert(self, cert: LogCert, kind: str) -> None:
        """Signature and log of one certificate; raises with a reason."""
        if self.clock is not None:
            self.clock.charge("host_verify")
        if cert.kind != kind:
            raise VerificationError("wrong-kind", f"expected a {kind} certificate, got {cert.kind}")
        if cert in self._valid:
            return
        p = cert.establish_params
        if len(p) < 12 or struct.unpack(">H", p[:2])[0] != C.TPM_TAG_TRANSPORT_PUBLIC:
            raise VerificationError("bad-log", "establish parameters are not a TPM_TRANSPORT_PUBLIC")
        attrs = struct.unpack(">I", p[2:6])[0]
        if attrs & REQUIRED_ATTRIBUTES != REQUIRED_ATTRIBUTES:
            raise VerificationError("not-exclusive", "the transport session was not exclusive and logged")
        out = cert.establish_out
        if len(out) != 4 + 32 + 20:
            raise VerificationError("bad-log", "establish response has the wrong size")
        ticks = out[4:36]
        tick_nonce = ticks[12:32]
        ord_est = struct.pack(">I", C.ORD["TPM_EstablishTransport"])
        establish = L.LogEntry(_sha1(ord_est, p), _sha1(struct.pack(">I", 0), ord_est, out),
                               struct.unpack(">Q", ticks[2:10])[0])
        ord_in = struct.pack(">I", _ORD[kind])
        value_struct = struct.pack(">H", C.TPM_TAG_COUNTER_VALUE) + self.label + struct.pack(">I", cert.value)
        inner = L.LogEntry(_sha1(ord_in, struct.pack(">I", self.counter_id)),
                           _sha1(struct.pack(">I", 0), ord_in, value_struct), cert.inner_ticks)
        anti = anti_replay(kind, cert.counter, cert.nonce)
        release_in = _sha1(struct.pack(">I", C.ORD["TPM_ReleaseTransportSigned"]), anti)
        d = L.release_output(L.replay([establish, inner], tick_nonce), cert.release_ticks, release_in)
        if not L.verify_release(self.aik_public, anti, d, cert.signature):
            raise VerificationError("bad-signature",
                                    f"{kind} certificate (counter {cert.counter}, value {cert.value}) does not "
                                    "verify under the AIK: forged, altered, or a different log")
        self._valid[cert] = None

    # ---- operations -----------------------------------------------------------------
    def check_increment(self, answer: Answer, counter: int, nonce: bytes, after: int | None = None) -> int:
        cert = answer.evidence
        if not isinstance(cert, LogCert):
            raise VerificationError("bad-evidence", "not an increment certificate")
        if cert.counter != counter:
            raise VerificationError("wrong-counter", f"certificate is for counter {cert.counter}, not {counter}")
        if cert.nonce != nonce:
            raise VerificationError("bad-nonce", "certificate answers another challenge (replay?)")
        self.check_cert(cert, INC)
        return check_incremented(answer.value, cert.value, after)

    def check_read(self, answer: Answer, counter: int, nonce: bytes) -> int:
        ev = answer.evidence
        if not isinstance(ev, ReadEvidence):
            raise VerificationError("bad-evidence", "not a read attestation")
        clock = ev.clock
        if clock.counter != counter:
            raise VerificationError("wrong-counter", f"clock certificate is for counter {clock.counter}")
        if clock.nonce != nonce:
            raise VerificationError("bad-nonce", "clock certificate answers another challenge (replay?)")
        self.check_cert(clock, READ)
        if ev.own is None:
            x = self.genesis
        else:
            if ev.own.counter != counter:
                raise VerificationError("wrong-counter",
                                        f"last increment certificate is for counter {ev.own.counter}, not {counter}")
            self.check_cert(ev.own, INC)
            x = ev.own.value
        return check_log_read(answer.value, x, clock.value, ev.since, counter, lambda c: self.check_cert(c, INC))
