"""A client for the TPM 2.0 Library 1.85 post-quantum commands, over any TCTI.

tpm2-tools 5.4 and tpm2-pytss 3.0 know neither the commands nor the
algorithm IDs, so this client marshals the frames itself and sends them raw:

    with PqcClient.connect("swtpm:host=127.0.0.1,port=2321") as tpm:
        key = tpm.create_primary("ML-DSA-65")
        mu = external_mu(key.public.unique, b"message")
        sig = tpm.sign_digest(key.handle, mu)          # verifies with cryptography's verify()

``connect`` takes a TCTI string: ``swtpm:``/``mssim:`` are spoken directly
over one persistent socket (so a session's objects stay in one connection);
anything else is opened with tpm2-pytss's ``TCTILdr`` and driven through its
``transmit``/``receive``. It lives in the device layer, beside the handlers
whose structures it shares: it is the wire protocol of the device, not an
application (protocols that use it belong in ``apps/``).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Protocol

from trustlab.devices.tpm2.commands import TPM_RC_COMMAND_CODE, response_code_text
from trustlab.devices.tpm2.extensions import TPM_RC_SIZE, TPM_RC_TYPE, Reader
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.structures import frame, password
from trustlab.errors import TrustlabError

ALGORITHMS = tuple(keys.MLDSA_BY_NAME) + tuple(keys.MLKEM_BY_NAME)
DEFAULT_SIGN_ATTRS = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN)
DEFAULT_KEM_ATTRS = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.DECRYPT)
SEQUENCE_CHUNK = 1024
MAX_RESPONSE = 8192
"""Largest response this client accepts (a 1.85 TPM's ML-DSA-87 answers exceed 4096 bytes)."""


class TpmResponseError(TrustlabError):
    """The TPM answered with a non-zero response code."""

    HINTS = {0x142: "the command is longer than the TPM's TPM_PT_MAX_COMMAND_SIZE",
             0x095: "the answer would be longer than the TPM's TPM_PT_MAX_RESPONSE_SIZE"}
    """Codes whose cause is the chip's buffer (serve: the profile's chip's, ``tpm2_getcap properties-fixed``)."""

    def __init__(self, command: str, rc: int, least: int = 0, limit: int | None = None,
                 hint: str | None = None) -> None:
        hint = hint or self.HINTS.get(rc)
        if rc == TPM_RC_SIZE and limit is not None:  # the sizes side by side, and where a larger buffer is
            hint = (f"the answer{f', at least {least} bytes,' if least > limit else ''} "
                    f"would be longer than the TPM's TPM_PT_MAX_RESPONSE_SIZE of {limit} bytes; use a TPM with "
                    f"a larger one{_larger_profile(max(least, limit + 1))}")
        super().__init__(f"{command}: TPM returned {response_code_text(rc)}" + (f": {hint}" if hint else ""))
        self.rc = rc


PQC_FIRST_COMMAND, PQC_LAST_COMMAND = 0x1A3, 0x1AA  # TPM2_VerifySequenceComplete .. TPM2_Decapsulate (1.85)
NO_PQC_HINT = ("this TPM does not implement the TPM 2.0 Library 1.85 post-quantum commands (its "
               "TPM2_GetCapability(TPM_CAP_COMMANDS) lists none of 0x1A3-0x1AA); use a 1.85 TPM, e.g. "
               "trustlab serve --profile sealsq-qvault-pqc-tpm-wolftpm")


def _may_mean_no_pqc(rc: int) -> bool:
    """TPM_RC_TYPE (an unknown algorithm ID in a template, any parameter) or TPM_RC_COMMAND_CODE: what a TPM
    without the 1.85 commands answers to a PQC key or command."""
    return rc == TPM_RC_COMMAND_CODE or rc & 0xBF == TPM_RC_TYPE  # any parameter/handle number (bits 6, 8-11)


def _larger_profile(least: int) -> str:
    """', e.g. trustlab serve --profile NAME (its chip's N bytes)': the shipped TPM 2.0 profile whose chip
    (chips.toml ``max_command_size``) has the largest buffer of at least ``least`` bytes; '' when none has."""
    from trustlab.devices.tpm2.pqc_model import chips
    from trustlab.timing import registry

    fits = sorted((-chips.chip_for(n).max_command_size, n) for n in registry.available()
                  if n.endswith("-wolftpm") and chips.chip_for(n).max_command_size >= least)
    return f", e.g. trustlab serve --profile {fits[0][1]} (its chip's: {-fits[0][0]} bytes)" if fits else ""


class Transport(Protocol):
    def transact(self, command: bytes) -> bytes: ...
    def close(self) -> None: ...


class SocketTransport:
    """Raw TPM 2.0 frames on a swtpm data port, or MS-simulator TPM_SEND_COMMAND framing."""

    def __init__(self, host: str, port: int, mssim: bool = False, timeout: float = 120.0,
                 path: str | None = None) -> None:
        self.mssim = mssim
        where = path or f"{host}:{port}"
        try:
            if path is not None:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
            else:
                self.sock = socket.create_connection((host, port), timeout=timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise TrustlabError(f"cannot connect to the TPM at {where}: {exc.strerror or exc}") from None

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise TrustlabError("the TPM closed the connection")
            buf += chunk
        return buf

    def transact(self, command: bytes) -> bytes:
        if self.mssim:
            self.sock.sendall(struct.pack(">IBI", 8, 0, len(command)) + command)
            (size,) = struct.unpack(">I", self._read(4))
            response = self._read(_checked_size(size, 10))
            self._read(4)  # trailing ack
            return response
        self.sock.sendall(command)
        header = self._read(10)
        (size,) = struct.unpack_from(">I", header, 2)
        return header + self._read(_checked_size(size, 10) - 10)

    def close(self) -> None:
        self.sock.close()


def _checked_size(size: int, least: int) -> int:
    if not least <= size <= MAX_RESPONSE:
        raise TrustlabError(f"the TPM announced a {size}-byte response (expected {least}..{MAX_RESPONSE})")
    return size


class TctiTransport:
    """Any TCTI tpm2-pytss can load (``device:/dev/tpmrm0``, ``tabrmd`` ...)."""

    def __init__(self, spec: str) -> None:
        from tpm2_pytss.TCTILdr import TCTILdr

        name, _, conf = spec.partition(":")
        try:
            self.tcti = TCTILdr(name, conf or None)
        except Exception as exc:  # noqa: BLE001 - TSS2_Exception and loader errors alike
            raise TrustlabError(f"cannot open TCTI {spec!r}: {exc}") from None

    def transact(self, command: bytes) -> bytes:
        self.tcti.transmit(command)
        # TCTIs default to a 4096-byte buffer; an ML-DSA-87 signature response is 4.6 KB
        return bytes(self.tcti.receive(MAX_RESPONSE))

    def close(self) -> None:
        self.tcti.close()


def open_transport(spec: str) -> Transport:
    """``swtpm:host=H,port=P`` / ``mssim:...`` directly; other TCTI strings through TCTILdr."""
    name, _, conf = spec.partition(":")
    if name in ("swtpm", "mssim"):
        opts = dict(kv.split("=", 1) for kv in conf.split(",") if "=" in kv)
        try:
            port = int(opts.get("port", 2321))
        except ValueError:
            raise TrustlabError(f"TCTI {spec!r}: port is not a number") from None
        return SocketTransport(opts.get("host", "127.0.0.1"), port, mssim=(name == "mssim"), path=opts.get("path"))
    return TctiTransport(spec)


def split_response(response: bytes, n_handles: int) -> tuple[list[int], Reader]:
    """Response handles and a reader over the parameter area."""
    tag = struct.unpack_from(">H", response, 0)[0]
    handles = [struct.unpack_from(">I", response, 10 + 4 * i)[0] for i in range(n_handles)]
    pos = 10 + 4 * n_handles
    if tag == 0x8002:
        (size,) = struct.unpack_from(">I", response, pos)
        return handles, Reader(response[pos + 4:pos + 4 + size])
    return handles, Reader(response, pos)


def _answer_least(pub: S.Public, n_handles: int) -> int:
    """The fewest bytes of a TPM2_CreatePrimary (one handle) / TPM2_Create answer for ``pub`` (Part 3, 12.1
    and 24.1): header, handles, parameterSize, the TPM2B_PUBLIC with its key filled in, the creation data
    with no PCRs (a primary's parent names: its hierarchy's handle; Create's parent counted as unnamed),
    creationHash, a NULL ticket's (empty digest), CreatePrimary's TPM2B_NAME (Create's TPM2B_PRIVATE counted
    as empty) and the one password session's answer: a bound, never more than a TPM sends (swtpm behind serve
    sends exactly this for a primary key, tests/tpm2/test_pqc_serve.py)."""
    ps = keys.parameter_set(S.TPM_ALG_MLKEM if pub.type == S.TPM_ALG_MLKEM else S.TPM_ALG_MLDSA, pub.parameter_set)
    public = pub.with_unique(bytes(ps.public_size if ps is not None else 0)).marshal()
    h = len(S.digest(pub.name_alg, b""))
    # pcrSelect, pcrDigest, locality, parentNameAlg, parentName, parentQualifiedName, outsideInfo
    creation_data = 4 + 2 + 1 + 2 + 2 * 3 + (4 + 4 if n_handles else 0)
    tail = (2 + creation_data) + (2 + h) + (2 + 4 + 2) + (2 + 2 + h if n_handles else 2) + (2 + 1 + 2)
    return 10 + 4 * n_handles + 4 + 2 + len(public) + tail


def template(algorithm: str, *, attributes: int | None = None, allow_external_mu: bool = True,
             hash_alg: int | None = None, name_alg: int = S.TPM_ALG_SHA256) -> S.Public:
    """The TPMT_PUBLIC to create a key of ``algorithm`` (``hash_alg`` makes an ML-DSA key HashML-DSA)."""
    if algorithm in keys.MLDSA_BY_NAME:
        pset = keys.MLDSA_BY_NAME[algorithm]
        attrs = DEFAULT_SIGN_ATTRS if attributes is None else attributes
        if hash_alg is not None:
            return S.Public(S.TPM_ALG_HASH_MLDSA, name_alg, attrs, b"", pset, hash_alg=hash_alg)
        return S.Public(S.TPM_ALG_MLDSA, name_alg, attrs, b"", pset, allow_external_mu=allow_external_mu)
    if algorithm in keys.MLKEM_BY_NAME:
        attrs = DEFAULT_KEM_ATTRS if attributes is None else attributes
        return S.Public(S.TPM_ALG_MLKEM, name_alg, attrs, b"", keys.MLKEM_BY_NAME[algorithm])
    raise TrustlabError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")


def external_mu(public_key: bytes, message: bytes, context: bytes = b"") -> bytes:
    """The 64-byte mu a verifier of ``message`` recomputes (FIPS 204, ML-DSA.Sign line 6)."""
    stream = keys.MuStream(public_key, context, S.TPM_ALG_MLDSA)
    stream.update(message)
    return stream.mu()


def public_key(public: S.Public):
    """The cryptography public key object of a PQC TPMT_PUBLIC (for independent verification)."""
    ps = keys.parameter_set(public.type, public.parameter_set)
    if ps is None:
        raise TrustlabError(f"parameter set {public.parameter_set} of type {public.type:#x} is not supported")
    return ps.public_cls.from_public_bytes(public.unique)


def pcr_selection(bank: int, pcrs: list[int]) -> bytes:
    """TPML_PCR_SELECTION of one bank (three-byte mask, PCRs 0-23)."""
    mask = bytearray(3)
    for i in pcrs:
        if not 0 <= i < 24:
            raise TrustlabError(f"PCR {i}: expected 0..23")
        mask[i // 8] |= 1 << (i % 8)
    return S.u32(1) + S.u16(bank) + bytes([3]) + bytes(mask)


@dataclass
class LoadedKey:
    handle: int
    public: S.Public
    name: bytes


def parse_public_area(area: bytes) -> S.Public:
    r = Reader(area)
    pub = S.parse_public(r)
    r.end()
    return pub


class PqcClient:
    """The 1.85 PQC commands (plus what it takes to use them) over one transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    @classmethod
    def connect(cls, tcti: str) -> "PqcClient":
        return cls(open_transport(tcti))

    def __enter__(self) -> "PqcClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    def call(self, name: str, command: bytes, least: int = 0, size_hint: str | None = None) -> bytes:
        """Send one frame; a non-zero response code raises :class:`TpmResponseError`.

        ``least``: the fewest bytes the answer can have (what a TPM_RC_SIZE error gives beside the TPM's
        TPM_PT_MAX_RESPONSE_SIZE, which it then asks the TPM for). ``size_hint``: what TPM_RC_SIZE means for
        a command whose answer is small (then it is not the response buffer)."""
        response = self.transport.transact(command)
        if len(response) < 10:
            raise TrustlabError(f"{name}: short response ({len(response)} bytes)")
        rc = S.response_code(response)
        if rc != 0:
            if size_hint is not None and rc == TPM_RC_SIZE:
                raise TpmResponseError(name, rc, hint=size_hint)
            if _may_mean_no_pqc(rc) and self.pqc_commands() == frozenset():
                raise TpmResponseError(name, rc, hint=NO_PQC_HINT)
            limit = self.max_response_size() if rc == TPM_RC_SIZE else None
            raise TpmResponseError(name, rc, least, limit)
        return response

    def pqc_commands(self) -> frozenset[int] | None:
        """The 1.85 post-quantum command codes (0x1A3-0x1AA) this TPM lists in TPM2_GetCapability(TPM_CAP_COMMANDS),
        or None when it does not answer: how a client tells a TPM without them from a wrong argument."""
        try:
            asked = S.u32(S.TPM_CAP_COMMANDS) + S.u32(PQC_FIRST_COMMAND) + S.u32(PQC_LAST_COMMAND - PQC_FIRST_COMMAND + 1)
            response = self.transport.transact(frame(0x17A, [], asked))
            if len(response) < 19 or S.response_code(response) != 0:
                return None
            # tag, size, rc, moreData, capability, count, then TPMA_CCs (commandIndex in the low 16 bits)
            (count,) = struct.unpack_from(">I", response, 15)
            listed = struct.unpack_from(f">{count}I", response, 19)
        except (TrustlabError, OSError, struct.error):
            return None
        return frozenset(c & 0xFFFF for c in listed if PQC_FIRST_COMMAND <= c & 0xFFFF <= PQC_LAST_COMMAND)

    def max_response_size(self) -> int | None:
        """The TPM's TPM_PT_MAX_RESPONSE_SIZE (TPM2_GetCapability), or None when it does not say."""
        try:
            asked = S.u32(S.TPM_CAP_TPM_PROPERTIES) + S.u32(S.TPM_PT_MAX_RESPONSE_SIZE) + S.u32(1)
            response = self.transport.transact(frame(S.TPM_CC_GET_CAPABILITY, [], asked))
            return S.tpm_properties(response).get(S.TPM_PT_MAX_RESPONSE_SIZE)
        except (TrustlabError, OSError):
            pass
        return None

    # ---- objects -------------------------------------------------------------

    def create_primary(self, algorithm: str | S.Public, *, hierarchy: int = S.TPM_RH_OWNER,
                       auth: bytes = b"", hierarchy_auth: bytes = b"", **template_args) -> LoadedKey:
        pub = algorithm if isinstance(algorithm, S.Public) else template(algorithm, **template_args)
        params = S.sensitive_create(auth) + S.tpm2b(pub.marshal()) + S.tpm2b(b"") + S.u32(0)
        response = self.call("TPM2_CreatePrimary", frame(0x131, [hierarchy], params, [password(hierarchy_auth)]),
                             least=_answer_least(pub, 1))
        (handle,), r = split_response(response, 1)
        out = parse_public_area(r.tpm2b())
        r.tpm2b(), r.tpm2b(), r.u16(), r.u32(), r.tpm2b()  # creation data, hash, ticket
        return LoadedKey(handle, out, r.tpm2b())

    def create_storage_primary(self, hierarchy: int = S.TPM_RH_OWNER, hierarchy_auth: bytes = b"") -> int:
        """A classical ECC P-256 storage key (swtpm's) to parent PQC keys; returns its handle."""
        attrs = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.NO_DA
                 | S.RESTRICTED | S.DECRYPT)
        public = (S.u16(0x0023) + S.u16(S.TPM_ALG_SHA256) + S.u32(attrs) + S.tpm2b(b"")
                  + S.u16(S.TPM_ALG_AES) + S.u16(128) + S.u16(S.TPM_ALG_CFB) + S.u16(S.TPM_ALG_NULL)
                  + S.u16(0x0003) + S.u16(S.TPM_ALG_NULL) + S.tpm2b(b"") + S.tpm2b(b""))
        params = S.sensitive_create() + S.tpm2b(public) + S.tpm2b(b"") + S.u32(0)
        response = self.call("TPM2_CreatePrimary", frame(0x131, [hierarchy], params, [password(hierarchy_auth)]))
        return split_response(response, 1)[0][0]

    def create(self, parent: int, algorithm: str | S.Public, *, parent_auth: bytes = b"", auth: bytes = b"",
               **template_args) -> tuple[bytes, bytes]:
        """(TPM2B_PRIVATE contents, TPMT_PUBLIC) of a new key under ``parent``."""
        pub = algorithm if isinstance(algorithm, S.Public) else template(algorithm, **template_args)
        params = S.sensitive_create(auth) + S.tpm2b(pub.marshal()) + S.tpm2b(b"") + S.u32(0)
        response = self.call("TPM2_Create", frame(0x153, [parent], params, [password(parent_auth)]),
                             least=_answer_least(pub, 0))
        _, r = split_response(response, 0)
        return r.tpm2b(), r.tpm2b()

    def load(self, parent: int, private: bytes, public: bytes, *, parent_auth: bytes = b"") -> LoadedKey:
        params = S.tpm2b(private) + S.tpm2b(public)
        response = self.call("TPM2_Load", frame(0x157, [parent], params, [password(parent_auth)]))
        (handle,), r = split_response(response, 1)
        return LoadedKey(handle, parse_public_area(public), r.tpm2b())

    def read_public(self, handle: int) -> tuple[S.Public, bytes, bytes]:
        response = self.call("TPM2_ReadPublic", frame(0x173, [handle], b""))
        _, r = split_response(response, 0)
        return parse_public_area(r.tpm2b()), r.tpm2b(), r.tpm2b()

    def flush(self, handle: int) -> None:
        self.call("TPM2_FlushContext", frame(0x165, [], S.u32(handle)))

    def context_save(self, handle: int) -> bytes:
        """The TPMS_CONTEXT of a loaded key (reload it in another connection with :meth:`context_load`)."""
        response = self.call("TPM2_ContextSave", frame(0x162, [handle], b""))
        return split_response(response, 0)[1].rest()

    def context_load(self, context: bytes) -> LoadedKey:
        """Load a TPMS_CONTEXT; one that is not a whole structure (empty, cut short, bytes after it) is refused
        here, never sent."""
        problem = S.context_problem(context)
        if problem is not None:
            raise TrustlabError(f"TPM2_ContextLoad: not a TPMS_CONTEXT ({problem}); not sent to the TPM")
        response = self.call("TPM2_ContextLoad", frame(0x161, [], context),  # its answer is one handle
                             size_hint="a size inside the context does not match its contents (damaged)")
        handle = split_response(response, 1)[0][0]
        public, name, _qn = self.read_public(handle)
        return LoadedKey(handle, public, name)

    # ---- ML-DSA --------------------------------------------------------------

    def sign_digest(self, key: int, digest: bytes, *, context: bytes = b"", auth: bytes = b"",
                    validation: bytes | None = None) -> bytes:
        """The ML-DSA signature bytes over ``digest`` (an external mu, or PH(M) for HashML-DSA).

        ``validation``: a TPMT_TK_HASHCHECK (from TPM2_Hash), which a restricted key needs; else a NULL ticket.
        """
        ticket = S.null_hashcheck_ticket() if validation is None else validation
        params = S.tpm2b(context) + S.tpm2b(digest) + ticket
        response = self.call("TPM2_SignDigest", frame(0x1A6, [key], params, [password(auth)]))
        _, r = split_response(response, 0)
        return S.parse_signature_bytes(r.rest())[2]

    def verify_digest_signature(self, key: LoadedKey, digest: bytes, signature: bytes, *,
                                context: bytes = b"") -> bytes:
        """The TPMT_TK_VERIFIED; a bad signature raises TpmResponseError (TPM_RC_SIGNATURE)."""
        params = S.tpm2b(context) + S.tpm2b(digest) + S.signature(key.public, signature)
        response = self.call("TPM2_VerifyDigestSignature", frame(0x1A5, [key.handle], params))
        return split_response(response, 0)[1].rest()

    def _update(self, seq: int, message: bytes, seq_auth: bytes, keep_last: bool) -> bytes:
        """SequenceUpdate all but (optionally) the last chunk; returns what is left for Complete."""
        chunks = [message[i:i + SEQUENCE_CHUNK] for i in range(0, len(message), SEQUENCE_CHUNK)] or [b""]
        last = chunks.pop() if keep_last else b""
        for chunk in chunks:
            self.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(chunk), [password(seq_auth)]))
        return last

    def sign_sequence(self, key: int, message: bytes, *, context: bytes = b"", auth: bytes = b"",
                      seq_auth: bytes = b"") -> bytes:
        """ML-DSA over a whole message of any length: SignSequenceStart, SequenceUpdate..., Complete."""
        response = self.call("TPM2_SignSequenceStart",
                             frame(0x1AA, [key], S.tpm2b(seq_auth) + S.tpm2b(context)))
        (seq,), _ = split_response(response, 1)
        last = self._update(seq, message, seq_auth, keep_last=True)
        response = self.call("TPM2_SignSequenceComplete",
                             frame(0x1A4, [seq, key], S.tpm2b(last), [password(seq_auth), password(auth)]))
        return S.parse_signature_bytes(split_response(response, 0)[1].rest())[2]

    def verify_sequence(self, key: LoadedKey, message: bytes, signature: bytes, *, context: bytes = b"",
                        seq_auth: bytes = b"") -> bytes:
        response = self.call("TPM2_VerifySequenceStart",
                             frame(0x1A9, [key.handle], S.tpm2b(seq_auth) + S.tpm2b(b"") + S.tpm2b(context)))
        (seq,), _ = split_response(response, 1)
        self._update(seq, message, seq_auth, keep_last=False)
        response = self.call("TPM2_VerifySequenceComplete",
                             frame(0x1A3, [seq, key.handle], S.signature(key.public, signature),
                                   [password(seq_auth)]))
        return split_response(response, 0)[1].rest()

    def quote(self, key: int, pcrs: list[int], *, qualifying: bytes = b"", bank: int = S.TPM_ALG_SHA256,
              auth: bytes = b"") -> tuple[bytes, bytes]:
        """(TPMS_ATTEST bytes, ML-DSA signature over them) of the given PCRs of ``bank``."""
        params = S.tpm2b(qualifying) + S.u16(S.TPM_ALG_NULL) + pcr_selection(bank, pcrs)
        response = self.call("TPM2_Quote", frame(0x158, [key], params, [password(auth)]))
        _, r = split_response(response, 0)
        attest = r.tpm2b()
        return attest, S.parse_signature_bytes(r.rest())[2]

    # ---- ML-KEM --------------------------------------------------------------

    def encapsulate(self, key: int) -> tuple[bytes, bytes]:
        """(shared secret, ciphertext)."""
        response = self.call("TPM2_Encapsulate", frame(0x1A7, [key], b""))
        _, r = split_response(response, 0)
        return r.tpm2b(), r.tpm2b()

    def decapsulate(self, key: int, ciphertext: bytes, *, auth: bytes = b"") -> bytes:
        response = self.call("TPM2_Decapsulate", frame(0x1A8, [key], S.tpm2b(ciphertext), [password(auth)]))
        return split_response(response, 0)[1].tpm2b()


# ---- measurement ---------------------------------------------------------------


def measure(client: PqcClient, algorithms: tuple[str, ...] = ALGORITHMS, repeat: int = 10,
            progress=None) -> list:
    """Client-side wall time of each PQC command, as ``trustlab measure`` rows (``harness.Row``).

    Per algorithm: TPM2_CreatePrimary (key generation; the flush after it is
    not timed), then TPM2_SignDigest + TPM2_VerifyDigestSignature (ML-DSA; the
    in-TPM verify is skipped for ML-DSA-87, whose signature does not fit a
    4096-byte command) or TPM2_Encapsulate + TPM2_Decapsulate (ML-KEM).
    Against ``trustlab serve`` in realtime mode the rows are the modelled
    chip's times (plus the host's client overhead).
    """
    import time

    from trustlab.devices.tpm2.harness import Row

    def timed(fn):
        started = time.perf_counter()
        out = fn()
        return (time.perf_counter() - started) * 1000.0, out

    rows = []
    for algorithm in algorithms:
        ps = keys.parameter_set(*(_algorithm_ids(algorithm)))
        samples: dict[str, list[float]] = {}
        for _ in range(repeat):
            ms, key = timed(lambda: client.create_primary(algorithm))
            samples.setdefault("TPM2_CreatePrimary", []).append(ms)
            if algorithm in keys.MLDSA_BY_NAME:
                mu = external_mu(key.public.unique, b"trustlab measure")
                ms, sig = timed(lambda: client.sign_digest(key.handle, mu))
                samples.setdefault("TPM2_SignDigest", []).append(ms)
                if algorithm != "ML-DSA-87":
                    ms, _ = timed(lambda: client.verify_digest_signature(key, mu, sig))
                    samples.setdefault("TPM2_VerifyDigestSignature", []).append(ms)
            else:
                ms, (_secret, ct) = timed(lambda: client.encapsulate(key.handle))
                samples.setdefault("TPM2_Encapsulate", []).append(ms)
                ms, _ = timed(lambda: client.decapsulate(key.handle, ct))
                samples.setdefault("TPM2_Decapsulate", []).append(ms)
            client.flush(key.handle)
        for command, xs in samples.items():
            rows.append(Row.of(command, ps.variant, xs))
            if progress is not None:
                progress(command, ps.variant)
    return rows


def _algorithm_ids(algorithm: str) -> tuple[int, int]:
    if algorithm in keys.MLDSA_BY_NAME:
        return S.TPM_ALG_MLDSA, keys.MLDSA_BY_NAME[algorithm]
    if algorithm in keys.MLKEM_BY_NAME:
        return S.TPM_ALG_MLKEM, keys.MLKEM_BY_NAME[algorithm]
    raise TrustlabError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
