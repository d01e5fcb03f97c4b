"""The measurement suite: time TPM 2.0 commands over any TCTI (tpm2-pytss).

This is how a real chip becomes a profile, as the 2010 paper did for TPM 1.2:
each command is repeated, the wall time of each call is taken on the host, and
error-aborted variants (a handle that does not exist, a wrong password, a key
of the wrong type - the paper's bad-authentication and bind-key-for-signing
tests) time the command path without its cryptography, which isolates the
overheads. The paper timed right at the device read/write; the equivalent
here is ``subtract=client_overhead(...)``, which takes this host's TSS and
socket time off every sample.
The rows go straight into ``trustlab fit``: ``command,variant,ms`` plus sd, n
and percentiles; every (command, variant) has a registered formula in family
``tpm2`` whose coefficients are the suite's wire sizes.

Each timed step issues exactly one TPM command (setup and clean-up are not
timed); a test checks that against the proxy's trace.
"""

from __future__ import annotations

import csv
import math
import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from trustlab.errors import TrustlabError

SUITES = ("small", "full")
CENTERS = ("mean", "median", "min")

NV_DATA_INDEX = 0x01500010
NV_BIG_INDEX = 0x01500011
NV_COUNTER_INDEX = 0x01500012
NV_SCRATCH_INDEX = 0x01500013


@dataclass(frozen=True)
class Row:
    """Summary of one (command, variant) over its repetitions; a ``trustlab fit`` row."""

    command: str
    variant: str
    ms: float
    sd: float
    n: int
    min: float
    max: float
    p50: float
    p90: float
    p95: float
    p99: float
    weight: float = 0.0
    """1 / variance of ``ms`` as an estimate (sd^2 / n, sd floored at :data:`SD_FLOOR`): what
    ``trustlab fit --weights given`` uses, so noisy rows (key generation) do not swamp the fit."""
    center: str = "mean"
    """What ``ms`` is (mean, median or min of the samples); ``trustlab fit`` labels its column so."""
    samples: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @staticmethod
    def of(command: str, variant: str, samples: list[float], center: str = "mean") -> "Row":
        """Summary of samples; ``ms`` is their mean, median or minimum (``center``).

        The mean is what the paper used. Host noise (other processes, late
        wake-ups, page faults) only ever adds time, so on a busy host the
        median or the minimum estimates the TPM's own time better.
        """
        xs = sorted(samples)
        n = len(xs)
        mean = sum(xs) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
        ms = {"median": _pct(xs, 50), "min": xs[0]}.get(center, mean)
        weight = n / max(sd, SD_FLOOR) ** 2
        return Row(command, variant, ms, sd, n, xs[0], xs[-1], _pct(xs, 50), _pct(xs, 90), _pct(xs, 95),
                   _pct(xs, 99), weight, center, tuple(samples))


SD_FLOOR = 0.001
"""ms: a row whose samples do not vary (a virtual proxy, a deterministic model) is weighted as if its
sd were 1 us - finite, and far above any row that really varies."""


def _pct(xs: list[float], p: float) -> float:
    """Linear-interpolated percentile of sorted samples (numpy's default method)."""
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


FIELDS = ["command", "variant", "ms", "sd", "n", "min", "max", "p50", "p90", "p95", "p99", "weight", "center"]


def check_output(path: Path, flag: str = "--out") -> None:
    """Refuse an output path that cannot be written, *before* a long benchmark runs.

    A measurement takes minutes; finding out afterwards that ``--out`` names a
    directory or an unwritable place loses all of it.
    """
    path = Path(path)
    if path.is_dir():
        raise TrustlabError(f"{flag} {path}: is a directory, expected a file name such as {path / 'chip.csv'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise TrustlabError(f"{flag} {path}: directory {parent} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise TrustlabError(f"{flag} {path}: file is not writable")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise TrustlabError(f"{flag} {path}: directory {parent} is not writable")


def write_csv(rows: Iterable[Row], path: Path) -> None:
    """Write the rows ``trustlab fit`` reads; written to a sibling temp file and renamed,
    so a failure never leaves a half-written CSV over an older good one."""
    path = Path(path)
    check_output(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(FIELDS)
            for r in rows:
                w.writerow([r.command, r.variant] + [f"{getattr(r, f):.6g}" if isinstance(getattr(r, f), float)
                                                     else getattr(r, f) for f in FIELDS[2:]])
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TrustlabError(f"--out {path}: cannot write: {exc.strerror or exc}") from None


def open_tcti(spec: str):
    """``swtpm:port=P``, ``mssim:host=H,port=P``, ``device:/dev/tpmrm0`` ... -> a TCTILdr.

    The TSS logs every TPM error to stderr; the suite provokes errors on
    purpose, so its logging is silenced unless the user set ``TSS2_LOG``.
    """
    os.environ.setdefault("TSS2_LOG", "all+NONE")
    from tpm2_pytss import TCTILdr
    from tpm2_pytss.TSS2_Exception import TSS2_Exception

    name, _, conf = spec.partition(":")
    if not name:
        raise TrustlabError(f"--tcti {spec!r}: expected NAME[:CONF], e.g. swtpm:port=2321 or device:/dev/tpmrm0")
    try:
        return TCTILdr(name, conf or None)
    except TSS2_Exception as exc:
        raise TrustlabError(f"--tcti {spec!r}: cannot open: {exc}") from None


Step = tuple[str, str, Callable[[], object]]


class Suite:
    """Objects the suite needs (keys, NV indices, sessions), created untimed."""

    def __init__(self, esys) -> None:
        from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_ECC, TPM2_SE, TPMA_NV, TPMA_OBJECT
        from tpm2_pytss.types import (
            TPM2B_NV_PUBLIC,
            TPM2B_PUBLIC,
            TPM2B_SENSITIVE_CREATE,
            TPMS_NV_PUBLIC,
            TPMS_SENSITIVE_CREATE,
            TPMT_RSA_DECRYPT,
            TPMT_SIG_SCHEME,
        )

        self.esys = esys
        self.ESYS_TR, self.TPM2_ALG, self.TPM2_SE = ESYS_TR, TPM2_ALG, TPM2_SE
        self.TPM2B_PUBLIC, self.TPM2B_SENSITIVE_CREATE = TPM2B_PUBLIC, TPM2B_SENSITIVE_CREATE
        self.TPMS_SENSITIVE_CREATE = TPMS_SENSITIVE_CREATE
        sign_attrs = (TPMA_OBJECT.SIGN_ENCRYPT | TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.SENSITIVEDATAORIGIN
                      | TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT | TPMA_OBJECT.NODA)
        dec_attrs = (TPMA_OBJECT.DECRYPT | TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.SENSITIVEDATAORIGIN
                     | TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT | TPMA_OBJECT.NODA)
        self.templates = {
            "rsa2048": TPM2B_PUBLIC.parse("rsa2048:rsassa-sha256:null", objectAttributes=sign_attrs),
            "ecc256": TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256:null", objectAttributes=sign_attrs),
            "rsa2048-decrypt": TPM2B_PUBLIC.parse("rsa2048:null:null", objectAttributes=dec_attrs),
            "ecc256-decrypt": TPM2B_PUBLIC.parse("ecc256:null:null", objectAttributes=dec_attrs),
            "hmac": TPM2B_PUBLIC.parse("hmac:sha256", objectAttributes=sign_attrs),
            "seal": TPM2B_PUBLIC.parse(
                "keyedhash", objectAttributes=(TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.FIXEDTPM
                                                     | TPMA_OBJECT.FIXEDPARENT | TPMA_OBJECT.NODA)),
        }
        self.scheme = {
            "rsa2048": TPMT_SIG_SCHEME(scheme=TPM2_ALG.RSASSA),
            "ecc256": TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA),
        }
        self.scheme["rsa2048"].details.any.hashAlg = TPM2_ALG.SHA256
        self.scheme["ecc256"].details.any.hashAlg = TPM2_ALG.SHA256
        self.oaep = TPMT_RSA_DECRYPT(scheme=TPM2_ALG.OAEP)
        self.oaep.details.oaep.hashAlg = TPM2_ALG.SHA256
        self.digest = bytes(range(32))

        # the storage parent: an ECC primary (fast to create on every chip)
        self.parent, *_ = esys.create_primary(None, "ecc256:aes128cfb")
        self.sealed_in = TPM2B_SENSITIVE_CREATE(TPMS_SENSITIVE_CREATE(data=b"trustlab sealed secret 32 bytes!"))
        self._blobs: dict[str, tuple] = {}
        self.keys: dict[str, object] = {}  # kind -> ESYS_TR of the loaded copy (few slots: see ensure())
        self.signatures: dict[str, object] = {}
        self.ciphertext = None

        nv_attrs = TPMA_NV.OWNERWRITE | TPMA_NV.OWNERREAD | TPMA_NV.AUTHWRITE | TPMA_NV.AUTHREAD | TPMA_NV.NO_DA
        self.nv_public = {}
        for index, size, extra in ((NV_DATA_INDEX, 32, 0), (NV_BIG_INDEX, 1024, 0), (NV_SCRATCH_INDEX, 32, 0),
                                   (NV_COUNTER_INDEX, 8, TPM2_NT_COUNTER << 4)):
            self.nv_public[index] = TPM2B_NV_PUBLIC(TPMS_NV_PUBLIC(
                nvIndex=index, nameAlg=TPM2_ALG.SHA256, attributes=nv_attrs | extra, dataSize=size))
        self.nv = {}
        for index in (NV_DATA_INDEX, NV_BIG_INDEX, NV_COUNTER_INDEX):
            self._undefine_if_present(index)
            self.nv[index] = esys.nv_define_space(b"", self.nv_public[index])
        self._undefine_if_present(NV_SCRATCH_INDEX)
        esys.nv_write(self.nv[NV_DATA_INDEX], b"\x5a" * 32)
        esys.nv_write(self.nv[NV_BIG_INDEX], b"\xa5" * 1024)
        esys.nv_increment(self.nv[NV_COUNTER_INDEX])
        self.ECC = TPM2_ECC
        self.pcrs = "sha256:0,1,2,3"
        self._pending: list = []

    @property
    def blobs(self) -> "_Blobs":
        return _Blobs(self)

    def blob(self, kind: str) -> tuple:
        """(private, public) of a key of ``kind`` under the parent, created once, untimed."""
        if kind not in self._blobs:
            sensitive = self.sealed_in if kind == "seal" else None
            priv, pub, *_ = self.esys.create(self.parent, sensitive, self.templates[kind])
            self._blobs[kind] = (priv, pub)
        return self._blobs[kind]

    def _prepare_data(self, what: str) -> None:
        """Inputs some steps consume (a signature to verify, a ciphertext to decrypt), made untimed."""
        if what == "signatures" and not self.signatures:
            for kind in ("rsa2048", "ecc256"):
                self.ensure(kind)
                self.signatures[kind] = self.esys.sign(self.keys[kind], self.digest, self.scheme[kind])
        elif what == "ciphertext" and self.ciphertext is None:
            self.ensure("rsa2048-decrypt")
            self.ciphertext = self.esys.rsa_encrypt(self.keys["rsa2048-decrypt"], self.digest, self.oaep)

    MAX_KEYS = 2
    """Keys kept loaded besides the parent (libtpms holds 3 transient objects)."""

    def ensure(self, *kinds: str) -> None:
        """Have ``kinds`` loaded (plus the parent), untimed.

        A TPM holds only a few transient objects and the suite talks to it
        without a resource manager, so keys are loaded on demand and the
        least recently used is flushed when slots run out. ``"slot"`` asks
        for a free slot (the step itself creates or loads an object).
        """
        for what in ("signatures", "ciphertext"):
            if what in kinds:
                self._prepare_data(what)
        for kind in kinds:
            if kind.startswith("blob:"):
                self.blob(kind[5:])
        limit = self.MAX_KEYS - (1 if "slot" in kinds else 0)
        kinds = tuple(k for k in kinds if k in self.templates)
        for kind in kinds:
            if kind in self.keys:
                self.keys[kind] = self.keys.pop(kind)  # most recently used goes last
        for kind in kinds:
            if kind not in self.keys:
                self._evict(limit - 1, keep=kinds)
                self.keys[kind] = self.esys.load(self.parent, *self.blob(kind))
        self._evict(limit, keep=kinds)

    def _evict(self, limit: int, keep: tuple[str, ...]) -> None:
        for kind in [k for k in self.keys if k not in keep]:
            if len(self.keys) <= limit:
                break
            self.esys.flush_context(self.keys.pop(kind))

    def _undefine_if_present(self, index: int) -> None:
        try:
            handle = self.esys.tr_from_tpmpublic(index)
        except Exception:  # noqa: BLE001 - not defined (TPM_RC_HANDLE) is the usual case
            return
        self.esys.nv_undefine_space(handle)

    def close(self) -> None:
        esys = self.esys
        for index, handle in list(self.nv.items()):
            try:
                esys.nv_undefine_space(handle)
            except Exception:  # noqa: BLE001 - clean-up is best effort
                pass
        for handle in list(self.keys.values()) + [self.parent]:
            try:
                esys.flush_context(handle)
            except Exception:  # noqa: BLE001
                pass

    # ---- steps: (command, variant, keys needed, timed call, untimed clean-up) ----

    def steps(self, suite: str) -> list[tuple[str, str, tuple[str, ...], Callable[[], object],
                                              Callable[[object], None] | None]]:
        e = self.esys
        k = self.keys
        flush = e.flush_context
        sha256 = self.TPM2_ALG.SHA256
        s: list = [
            ("TPM2_GetRandom", "32", (), lambda: e.get_random(32), None),
            ("TPM2_Hash", "32", (), lambda: e.hash(b"\x11" * 32, sha256, self.ESYS_TR.OWNER), None),
            ("TPM2_Hash", "1024", (), lambda: e.hash(b"\x22" * 1024, sha256, self.ESYS_TR.OWNER), None),
            ("TPM2_NV_Write", "32", (), lambda: e.nv_write(self.nv[NV_DATA_INDEX], b"\x33" * 32), None),
            ("TPM2_NV_Write", "1024", (), lambda: e.nv_write(self.nv[NV_BIG_INDEX], b"\x44" * 1024), None),
            ("TPM2_NV_Read", "32", (), lambda: e.nv_read(self.nv[NV_DATA_INDEX], 32), None),
            ("TPM2_NV_Read", "1024", (), lambda: e.nv_read(self.nv[NV_BIG_INDEX], 1024), None),
            ("TPM2_NV_Increment", "counter", (), lambda: e.nv_increment(self.nv[NV_COUNTER_INDEX]), None),
            ("TPM2_Sign", "ecc256", ("ecc256",), lambda: e.sign(k["ecc256"], self.digest, self.scheme["ecc256"]),
             None),
            ("TPM2_Sign", "bad-handle", (), self._raw_sign_bad_handle, None),
        ]
        if suite == "small":
            return s
        s += [
            ("TPM2_CreatePrimary", "rsa2048", ("slot",), lambda: e.create_primary(None, self.templates["rsa2048"])[0],
             flush),
            ("TPM2_CreatePrimary", "ecc256", ("slot",), lambda: e.create_primary(None, self.templates["ecc256"])[0],
             flush),
            ("TPM2_Create", "rsa2048", (), lambda: e.create(self.parent, None, self.templates["rsa2048"]), None),
            ("TPM2_Create", "ecc256", (), lambda: e.create(self.parent, None, self.templates["ecc256"]), None),
            ("TPM2_Create", "seal", (), lambda: e.create(self.parent, self.sealed_in, self.templates["seal"]),
             None),
            ("TPM2_Load", "rsa2048", ("blob:rsa2048", "slot"), lambda: e.load(self.parent, *self.blobs["rsa2048"]), flush),
            ("TPM2_Load", "ecc256", ("blob:ecc256", "slot"), lambda: e.load(self.parent, *self.blobs["ecc256"]), flush),
            ("TPM2_FlushContext", "ecc256", ("blob:ecc256", "slot"), self._timed_flush, None),
            ("TPM2_Sign", "rsa2048", ("rsa2048",),
             lambda: e.sign(k["rsa2048"], self.digest, self.scheme["rsa2048"]), None),
            ("TPM2_VerifySignature", "rsa2048", ("signatures", "rsa2048"),
             lambda: e.verify_signature(k["rsa2048"], self.digest, self.signatures["rsa2048"]), None),
            ("TPM2_VerifySignature", "ecc256", ("signatures", "ecc256"),
             lambda: e.verify_signature(k["ecc256"], self.digest, self.signatures["ecc256"]), None),
            ("TPM2_RSA_Encrypt", "rsa2048", ("rsa2048-decrypt",),
             lambda: e.rsa_encrypt(k["rsa2048-decrypt"], self.digest, self.oaep), None),
            ("TPM2_RSA_Decrypt", "rsa2048", ("ciphertext", "rsa2048-decrypt"),
             lambda: e.rsa_decrypt(k["rsa2048-decrypt"], self.ciphertext, self.oaep), None),
            ("TPM2_HMAC", "32", ("hmac",), lambda: e.hmac(k["hmac"], b"\x55" * 32, sha256), None),
            ("TPM2_HMAC", "1024", ("hmac",), lambda: e.hmac(k["hmac"], b"\x66" * 1024, sha256), None),
            ("TPM2_NV_DefineSpace", "32", (), lambda: e.nv_define_space(b"", self.nv_public[NV_SCRATCH_INDEX]),
             lambda h: e.nv_undefine_space(h)),
            ("TPM2_Quote", "ecc256", ("ecc256",), lambda: e.quote(k["ecc256"], self.pcrs, b"nonce-0123456789",
                                                                 self.scheme["ecc256"]), None),
            ("TPM2_Quote", "rsa2048", ("rsa2048",), lambda: e.quote(k["rsa2048"], self.pcrs, b"nonce-0123456789",
                                                                   self.scheme["rsa2048"]), None),
            ("TPM2_StartAuthSession", "unsalted", (), lambda: e.start_auth_session(
                self.ESYS_TR.NONE, self.ESYS_TR.NONE, self.TPM2_SE.HMAC, "aes128cfb", sha256), flush),
            ("TPM2_StartAuthSession", "ecc256-salted", ("ecc256-decrypt",), lambda: e.start_auth_session(
                k["ecc256-decrypt"], self.ESYS_TR.NONE, self.TPM2_SE.HMAC, "aes128cfb", sha256), flush),
            ("TPM2_StartAuthSession", "rsa2048-salted", ("rsa2048-decrypt",), lambda: e.start_auth_session(
                k["rsa2048-decrypt"], self.ESYS_TR.NONE, self.TPM2_SE.HMAC, "aes128cfb", sha256), flush),
            ("TPM2_PolicyPCR", "sha256", (), self._timed_policy_pcr, None),
            ("TPM2_Unseal", "seal", ("seal",), lambda: e.unseal(k["seal"]), None),
            ("TPM2_Sign", "bad-auth", ("ecc256",), self._sign_bad_auth, None),
            ("TPM2_Sign", "wrong-key", ("rsa2048-decrypt",), self._sign_wrong_key, None),
            ("TPM2_NV_Read", "bad-auth", (), self._nv_read_bad_auth, None),
        ]
        return s

    # ---- steps that need more than one call --------------------------------

    def _raw_sign_bad_handle(self) -> object:
        """TPM2_Sign on a handle that does not exist, sent as a raw frame (ESAPI would refuse)."""
        body = struct.pack(">I", 0x80FFFFF0)  # keyHandle
        body += struct.pack(">I", 9) + struct.pack(">IHBH", 0x40000009, 0, 1, 0)  # password session
        body += struct.pack(">H", 32) + self.digest + struct.pack(">HH", 0x0018, 0x000B)
        body += struct.pack(">HIH", 0x8024, 0x40000007, 0)  # validation: TPMT_TK_HASHCHECK NULL ticket
        frame = struct.pack(">HII", 0x8002, 10 + len(body), 0x15D) + body
        tcti = self.esys.tcti
        tcti.transmit(frame)
        return tcti.receive()

    def _timed_flush(self) -> None:
        raise _Split(lambda: self.esys.load(self.parent, *self.blobs["ecc256"]), self.esys.flush_context)

    def _timed_policy_pcr(self) -> None:
        def start():
            return self.esys.start_auth_session(self.ESYS_TR.NONE, self.ESYS_TR.NONE, self.TPM2_SE.POLICY,
                                                "aes128cfb", self.TPM2_ALG.SHA256)
        raise _Split(start, lambda s: self.esys.policy_pcr(s, b"", self.pcrs), self.esys.flush_context)

    def _sign_bad_auth(self) -> None:
        key = self.keys["ecc256"]

        def wrong():
            self.esys.tr_set_auth(key, b"wrong password")

        def attempt(_):
            try:
                self.esys.sign(key, self.digest, self.scheme["ecc256"])
            except Exception:  # noqa: BLE001 - the failure is what is measured
                return
            raise TrustlabError("TPM2_Sign with a wrong password succeeded")

        raise _Split(wrong, attempt, lambda _: self.esys.tr_set_auth(key, b""))

    def _sign_wrong_key(self) -> None:
        """TPM2_Sign with a decryption key: refused after the key's attributes are checked."""
        try:
            self.esys.sign(self.keys["rsa2048-decrypt"], self.digest, self.scheme["rsa2048"])
        except Exception:  # noqa: BLE001 - the failure is what is measured
            return
        raise TrustlabError("TPM2_Sign with a decryption key succeeded")

    def _nv_read_bad_auth(self) -> None:
        handle = self.nv[NV_DATA_INDEX]

        def wrong():
            self.esys.tr_set_auth(handle, b"wrong password")

        def attempt(_):
            try:
                self.esys.nv_read(handle, 32, auth_handle=handle)
            except Exception:  # noqa: BLE001
                return
            raise TrustlabError("TPM2_NV_Read with a wrong password succeeded")

        raise _Split(wrong, attempt, lambda _: self.esys.tr_set_auth(handle, b""))


TPM2_NT_COUNTER = 0x1


class _Blobs:
    """``suite.blobs[kind]``: lazily created key blobs."""

    def __init__(self, suite: Suite) -> None:
        self._suite = suite

    def __getitem__(self, kind: str) -> tuple:
        return self._suite.blob(kind)


class _Split(Exception):
    """A step made of untimed set-up, the timed call, and untimed clean-up."""

    def __init__(self, setup, timed=None, cleanup=None) -> None:
        super().__init__("split step")
        self.setup, self.timed, self.cleanup = setup, timed, cleanup


def _wall_ms() -> float:
    return time.perf_counter() * 1000.0


def _run_once(fn: Callable[[], object], cleanup: Callable[[object], None] | None,
              now: Callable[[], float] = _wall_ms) -> float:
    """Time (ms, by ``now``) of one timed call; set-up and clean-up are not timed."""
    try:
        t0 = now()
        out = fn()
        ms = now() - t0
    except _Split as split:
        prepared = split.setup()
        if split.timed is None:  # a flush: setup made the object, clean-up is the timed call
            t0 = now()
            split.cleanup(prepared)
            return now() - t0
        t0 = now()
        split.timed(prepared)
        ms = now() - t0
        if split.cleanup is not None:
            split.cleanup(prepared)
        return ms
    if cleanup is not None:
        cleanup(out)
    return ms


def measure(tcti_spec: str, suite: str = "small", repeat: int = 10, warmup: int = 1,
            progress: Callable[[str, str], None] | None = None, tcti=None, center: str = "mean",
            subtract: Mapping[tuple[str, str], float] | None = None,
            clock: Callable[[], float] | None = None) -> list[Row]:
    """Run ``suite`` ``repeat`` times per step against the TPM at ``tcti_spec``.

    ``clock``: a clock in ms read instead of the wall clock around each timed
    call (e.g. ``lambda: proxy.clock.now_ms``, the modelled time of a virtual
    proxy: the suite then measures the model exactly, without host noise).

    ``center`` chooses what the ``ms`` column holds: ``mean`` or ``median``.
    ``subtract`` maps (command, variant) to a host-side overhead (see
    :func:`client_overhead`) taken off every sample, so the rows describe the
    TPM rather than this host's TSS stack.
    """
    if center not in CENTERS:
        raise TrustlabError(f"--center {center!r}: expected one of {', '.join(CENTERS)}")
    from tpm2_pytss import ESAPI
    from tpm2_pytss.TSS2_Exception import TSS2_Exception

    if suite not in SUITES:
        raise TrustlabError(f"--suite {suite!r}: expected one of {', '.join(SUITES)}")
    if repeat < 1:
        raise TrustlabError(f"--repeat {repeat}: must be at least 1")
    tcti = tcti or open_tcti(tcti_spec)
    try:
        esys = ESAPI(tcti)
    except TSS2_Exception as exc:
        raise TrustlabError(f"--tcti {tcti_spec!r}: cannot talk to the TPM: {exc}") from None
    rows: list[Row] = []
    try:
        s = Suite(esys)
        try:
            # Rounds over the whole suite rather than all repetitions of one
            # command in a row: a burst of load on the host then spoils one
            # sample of many commands, not every sample of one.
            steps = s.steps(suite)
            samples: list[list[float]] = [[] for _ in steps]
            for rnd in range(warmup + repeat):
                for i, (command, variant, needs, fn, cleanup) in enumerate(steps):
                    s.ensure(*needs)
                    if rnd >= warmup and progress:
                        progress(command, variant)
                    ms = _run_once(fn, cleanup, clock or _wall_ms)
                    if rnd >= warmup:
                        samples[i].append(ms)
            for (command, variant, *_), xs in zip(steps, samples):
                if subtract:
                    off = subtract.get((command, variant), 0.0)
                    xs = [max(x - off, 0.0) for x in xs]
                rows.append(Row.of(command, variant, xs, center))
        finally:
            s.close()
    except TSS2_Exception as exc:
        raise TrustlabError(f"measurement on {tcti_spec!r} failed: {exc}") from None
    finally:
        esys.close()
    return rows


def client_overhead(suite: str = "small", repeat: int = 10, warmup: int = 1,
                    center: str = "median") -> dict[tuple[str, str], float]:
    """This host's own time per suite step: TSS marshalling, TCTI, sockets.

    The suite is run against a local swtpm behind a *virtual* proxy (which
    never holds); for each step the median wall time minus the median time
    swtpm itself took is what the client spends around the TPM. Subtracting
    it from a measurement leaves the TPM's share (for a device TCTI the
    kernel path differs a little from the socket path measured here).
    """
    import statistics

    from trustlab.devices.tpm2.cost import zero_profile
    from trustlab.serving.proxy import TimingProxy
    from trustlab.serving.swtpm import Swtpm

    marks: list[tuple[str, str, int]] = []
    with Swtpm() as tpm, TimingProxy(zero_profile(), tpm, virtual=True) as proxy:
        rows = measure(proxy.tcti, suite=suite, repeat=repeat, warmup=warmup, center=center,
                       progress=lambda c, v: marks.append((c, v, len(proxy.records))))
        records = list(proxy.records)
    ends = [m[2] for m in marks[1:]] + [len(records)]
    backend: dict[tuple[str, str], list[float]] = {}
    for (command, variant, start), end in zip(marks, ends):
        backend.setdefault((command, variant), []).extend(
            r.backend_ms for r in records[start:end] if r.command == command)
    overhead = {}
    for row in rows:
        times = backend.get((row.command, row.variant)) or [0.0]
        typical = {"median": statistics.median(times), "min": min(times)}.get(center, statistics.mean(times))
        overhead[(row.command, row.variant)] = max(row.ms - typical, 0.0)
    return overhead
