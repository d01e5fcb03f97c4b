"""The host side: :class:`Tpm12`, one method per TPM command, authorization handled.

Applications talk to the TPM only through these methods (or raw frames via
:meth:`Tpm12.execute`). Each method marshals its parameters, adds the
authorization trailers computed by :class:`HostSession` objects, sends the
frame to the engine, checks the response HMACs and unmarshals the result —
what a TSS does. An ``auth=`` argument may be a :class:`HostSession` (reuse
it, e.g. an OSAP session) or simply the 20-byte secret, in which case a fresh
OIAP session is opened and closed for that one command (charged, as on a chip).

Inside ``with tpm.through(transport):`` every command is wrapped in
TPM_ExecuteTransport and recorded in ``transport.entries`` so a verifier can
recompute the signed log digest.
"""

from __future__ import annotations

import hmac as _hmac
import struct
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence, Union

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.engine import AUTH_IN, AUTH_OUT, HEADER, Engine
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import Key12, KeyParms, pubkey_modulus, rsa_public
from trustlab.devices.tpm12.nvstore import NVStore
from trustlab.devices.tpm12.parsed import Command, Reply
from trustlab.devices.tpm12.primitives import xor
from trustlab.devices.tpm12.transport_crypt import crypt
from trustlab.devices.tpm12.wire import ALLOC_MAX, Reader, Writer
from trustlab.timing.clock import Clock


_U32 = struct.Struct(">I").pack
_HASHTREE_HEAD = struct.Struct(">BQQQ").pack  # TPM_ExecuteHashTree: mode, index, value, delta
_HEADER_PACK = struct.Struct(">HII").pack  # tag, paramSize, ordinal / returnCode
_HEADER_UNPACK = struct.Struct(">HII").unpack_from
_EPOCH_SIZE = struct.Struct(">II").unpack_from  # TPM_ExecuteHashTree's answer after the root: epoch, signature size
_U32_FROM = struct.Struct(">I").unpack_from
_OSAP_HEAD = struct.Struct(">HI").pack  # TPM_OSAP: entityType, entityValue
_RC_SUCCESS = _U32(C.TPM_SUCCESS)
_ORD_OIAP = _U32(C.ORD["TPM_OIAP"])
_OIAP_FRAME = _HEADER_PACK(C.TPM_TAG_RQU_COMMAND, HEADER, C.ORD["TPM_OIAP"])
_HANDLE_STRUCTS = [struct.Struct(f">{n}I") for n in range(4)]
_CONTINUE = (b"\x00", b"\x01")  # continueAuthSession FALSE / TRUE
_OIAP_COMMAND = Command((C.ORD["TPM_OIAP"], (), b"", ()))  # (a tuple: one serves every TPM_OIAP)

# The in-process fast path (:mod:`.parsed`): a client whose engine is this process's own
# :class:`Engine` hands it commands as values instead of frames (same digests, HMACs, charges
# and answers; tests/tpm12/test_fast_path.py). A wrapper put around such an engine's ``execute``
# therefore sees :class:`~.parsed.Command` objects (``bytes(command)`` is the frame) and returns
# :class:`~.parsed.Reply` objects. False: every command is marshalled, as over a wire.
FAST_PATH = True


def _in_process(engine: object) -> bool:
    """True when ``engine`` is this process's own :class:`Engine` (not a remote TPM or a stand-in)."""
    return FAST_PATH and type(engine) is Engine


def _pack_handles(handles: Sequence[int]) -> bytes:
    n = len(handles)
    return (_HANDLE_STRUCTS[n] if n < 4 else struct.Struct(f">{n}I")).pack(*handles)


def _unpack_handles(n: int, out: bytes) -> tuple[int, ...]:
    """The ``n`` output handles at the start of a response's body."""
    return (_HANDLE_STRUCTS[n] if n < 4 else struct.Struct(f">{n}I")).unpack(out[:4 * n])


def _split_handles(n: int, body: bytes) -> tuple[list[int], bytes]:
    """The ``n`` output handles a response body starts with, and the parameters after them."""
    return (list(_unpack_handles(n, body)) if n else []), body[4 * n:]


def _missing_authorizations(trailers: Sequence[object], sessions: int) -> TpmError:
    """A reply short of (or beyond) one authorization per session sent: what the trailer's length
    check says of such a frame."""
    return TpmError("TPM_BAD_PARAM_SIZE", f"response has {len(trailers)} authorization(s), not {sessions}")


_RESPONSE_NAMES: dict[str, str] = {}


def _response_name(name: str) -> str:
    """``"<command> response"`` (what a response's Reader names in its errors), made once per command."""
    what = _RESPONSE_NAMES.get(name)
    if what is None:
        what = _RESPONSE_NAMES[name] = f"{name} response"
    return what


# TPM_TakeOwnership's SRK template, marshalled once (a Key12 is immutable)
_SRK_TEMPLATE = Key12(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS,
                      KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE), b"").marshal()
_TAG = {0: C.TPM_TAG_RQU_COMMAND, 1: C.TPM_TAG_RQU_AUTH1_COMMAND, 2: C.TPM_TAG_RQU_AUTH2_COMMAND}


def secret(text: str | bytes) -> bytes:
    """A 20-byte TPM authorization secret from a passphrase (SHA-1, as TSS 1.2 does)."""
    return hostcrypto.sha1(text.encode() if isinstance(text, str) else text)


@dataclass
class HostSession:
    """The caller's half of an OIAP/OSAP session: handle, nonces, and the HMAC key."""

    handle: int
    nonce_even: bytes
    key: bytes
    kind: str = "OIAP"
    cont: bool = True
    open: bool = True
    next_odd: bytes = field(default_factory=hostcrypto.nonce)

    def encrypt_auth(self, new_secret: bytes, odd: bool = False) -> bytes:
        """ADIP: hide a new secret under the OSAP shared secret (Part 1, 13.8)."""
        if self.kind != "OSAP":
            raise TpmError("TPM_AUTHFAIL", "new secrets must be sent under an OSAP session")
        pad = hostcrypto.sha1(self.key, self.next_odd if odd else self.nonce_even)
        return xor(new_secret, pad)

    def trailer(self, in_digest: bytes) -> bytes:
        """The 45-byte request authorization: :meth:`trailer_values` marshalled."""
        handle, odd, cont, value = self.trailer_values(in_digest)
        return b"".join((_U32(handle), odd, _CONTINUE[cont], value))

    def trailer_values(self, in_digest: bytes) -> tuple[int, bytes, int, bytes]:
        """The next request authorization as values (authHandle, nonceOdd, continue, authValue)."""
        if not self.open:
            raise TpmError("TPM_INVALID_AUTHHANDLE", f"host session {self.handle:#010x} is closed")
        odd, self._sent_odd = self.next_odd, self.next_odd
        self.next_odd = hostcrypto.nonce()
        cont = 1 if self.cont else 0
        return self.handle, odd, cont, hostcrypto.hmac_sha1(self.key, in_digest, self.nonce_even, odd, _CONTINUE[cont])

    def accept(self, out_digest: bytes, trailer: bytes) -> None:
        """Check this session's 41-byte response trailer: nonceEven, continueAuthSession, HMAC."""
        _check_trailer(self.key, out_digest, self._sent_odd, trailer)
        self.nonce_even = trailer[:20]
        self.open = trailer[20:21] != b"\x00"

    def accept_values(self, out_digest: bytes, even: bytes, cont: bytes, value: bytes) -> None:
        """:meth:`accept` of a trailer given as values (nonceEven, continue byte, resAuth)."""
        _check_auth(self.key, out_digest, self._sent_odd, even, cont, value)
        self.nonce_even = even
        self.open = cont != b"\x00"


def _check_trailer(key: bytes, out_digest: bytes, odd: bytes, trailer: bytes) -> None:
    """A response authorization (nonceEven, continueAuthSession, HMAC) must be 41 bytes and verify."""
    if len(trailer) != AUTH_OUT:
        raise TpmError("TPM_BAD_PARAM_SIZE", f"response authorization of {len(trailer)} bytes, not {AUTH_OUT}")
    _check_auth(key, out_digest, odd, trailer[:20], trailer[20:21], trailer[21:])


def _check_auth(key: bytes, out_digest: bytes, odd: bytes, even: bytes, cont: bytes, value: bytes) -> None:
    """A response authorization given as values must verify (HMAC over outParamDigest and the nonces)."""
    expect = hostcrypto.hmac_sha1(key, out_digest, even, odd, cont)
    if not _hmac.compare_digest(expect, value):
        raise TpmError("TPM_AUTHFAIL", "response authorization does not verify (tampered response?)")


@dataclass
class HostTransport(HostSession):
    """A transport session as the host sees it, with the log it must later verify.

    ``pubkeys``: handle -> RSA modulus of the keys the host uses inside the
    session; a wrapped command naming keys is logged with their pubKeyHash
    (Part 3, 24.2 step 10), so the host must know them (TPM_GetPubKey).
    """

    kind: str = "TRANSPORT"
    tick_nonce: bytes = b""
    entries: list[L.LogEntry] = field(default_factory=list)
    pubkeys: dict[int, bytes] = field(default_factory=dict)
    alg: int = 0  # encrypted session: TPM_ALG_MGF1 or TPM_ALG_AES128 (with scheme CTR/OFB)
    scheme: int = 0
    logged: bool = True

    def pubkey_hash(self, handles: Sequence[int]) -> bytes:
        if not handles:
            return L.ZERO
        missing = [h for h in handles if h not in self.pubkeys]
        if missing:
            raise TpmError("TPM_BAD_PARAMETER", f"the host does not know the public key of handle "
                           f"{missing[0]:#010x} (add it to transport.pubkeys to log the command)")
        return hostcrypto.sha1(*(L.store_pubkey_digest(self.pubkeys[h]) for h in handles))


Auth = Union[HostSession, bytes]
_ORD_READ_INTERNAL_PUB = struct.pack(">I", C.ORD["TPM_OwnerReadInternalPub"])


def key_template(usage: int, *, migratable: bool = False, auth: bool = True,
                 sig_scheme: int | None = None) -> Key12:
    """A TPM_KEY12 template for TPM_CreateWrapKey (no public key, no private part)."""
    if sig_scheme is None:
        sig_scheme = C.TPM_SS_RSASSAPKCS1v15_SHA1 if usage in (C.TPM_KEY_SIGNING, C.TPM_KEY_IDENTITY) else C.TPM_SS_NONE
    enc = C.TPM_ES_RSAESOAEP_SHA1_MGF1 if usage in (C.TPM_KEY_STORAGE, C.TPM_KEY_BIND) else C.TPM_ES_NONE
    return Key12(usage, C.TPM_KEY_FLAG_MIGRATABLE if migratable else 0,
                 C.TPM_AUTH_ALWAYS if auth else C.TPM_AUTH_NEVER,
                 KeyParms(C.TPM_ALG_RSA, enc, sig_scheme), b"")


def hmac_key_template(auth: bool = True) -> Key12:
    """Template of the what-if HMAC CMK (TPM_ALG_HMAC, migratable, certified)."""
    return Key12(C.TPM_KEY_HMAC, C.TPM_KEY_FLAG_MIGRATABLE | C.TPM_KEY_FLAG_MIGRATE_AUTHORITY,
                 C.TPM_AUTH_ALWAYS if auth else C.TPM_AUTH_NEVER,
                 KeyParms(C.TPM_ALG_HMAC, C.TPM_ES_NONE, C.TPM_SS_NONE, 0), b"")


def msa_composite(digests: Sequence[bytes]) -> bytes:
    """TPM_MSA_COMPOSITE: the approved list of a CMK (digests of TPM_PUBKEYs)."""
    return Writer().u32(len(digests)).raw(b"".join(digests)).bytes()


def pubkey_digest(pubkey: bytes) -> bytes:
    """SHA1 of a TPM_PUBKEY, the form keys take on an msaList."""
    return hostcrypto.sha1(pubkey)


def bind(pubkey: bytes, data: bytes) -> bytes:
    """Host-side Tspi_Data_Bind: OAEP-encrypt TPM_BOUND_DATA to a bind key's TPM_PUBKEY."""
    return hostcrypto.oaep_encrypt(rsa_public(pubkey_modulus(pubkey)[1]), C.STRUCT_VER + b"\x02" + data)


@dataclass(frozen=True)
class TransportRelease:
    signature: bytes
    ticks: bytes
    anti_replay: bytes
    trans_digest: bytes  # recomputed by the host from what it saw


class Tpm12:
    """A TPM 1.2 as an application sees it. ``Tpm12(clock, nv=FileNVStore(path))``.

    ``engine``: anything with ``execute(frame) -> bytes`` instead of a fresh
    in-process engine, e.g. a TPM reached over the wire (:mod:`trustlab.serving.tpm12.socket_tpm`).
    """

    def __init__(self, clock: Clock, nv: NVStore | None = None,
                 keygen: Callable[[int], rsa.RSAPrivateKey] | None = None, *, started: bool = True,
                 engine=None) -> None:
        """``started=False``: the TPM waits for :meth:`TPM_Startup` (as after _TPM_Init)."""
        self.clock = clock
        self.engine = engine if engine is not None else Engine(clock, nv, keygen, started=started)
        self._through: HostTransport | None = None
        self._last_digests: tuple[bytes, ...] = (b"", b"")

    # ---- raw access ---------------------------------------------------------
    def execute(self, frame: bytes) -> bytes:
        """Send marshalled command bytes, get response bytes (no checking)."""
        return self.engine.execute(frame)

    def restart(self) -> None:
        """Power cycle: a new engine from the same NV store, then TPM_Startup(ST_CLEAR)."""
        self.engine = Engine(self.clock, self.engine.nv, self.engine.keygen)
        self._through = None

    # ---- framing --------------------------------------------------------------
    def _session(self, auth: Auth) -> HostSession:
        if isinstance(auth, HostSession):
            return auth
        s = self.TPM_OIAP(auth)
        s.cont = False
        return s

    def call(self, name: str, *, handles: Sequence[int] = (), params: bytes = b"",
             auth: Sequence[Auth] = (), out_handles: int = 0) -> tuple[list[int], Reader]:
        """Build, send and check one command; returns output handles and a parameter reader."""
        # (precompiled structs, no per-call format strings, no helper frames: every command of every run comes here)
        t = self._through
        if t is None and len(auth) == 1:
            kind = type(auth[0])
            if kind is bytes:
                return self._call_with_secret(name, handles, params, auth[0], out_handles)
            if kind is HostSession and _in_process(self.engine):
                out_h, out_params = self._call_with_session(name, handles, params, auth[0], out_handles)
                return out_h, Reader(out_params, _response_name(name))
        sessions = [a if isinstance(a, HostSession) else self._session(a) for a in auth] if auth else []
        ordinal = C.ORD[name]
        ord_b = _U32(ordinal)
        # the parameter digests are needed only by sessions and transport logs; otherwise on demand
        digests = bool(sessions) or t is not None
        in_digest = hostcrypto.sha1(ord_b, params) if digests else b""
        if t is None and _in_process(self.engine):  # the fast path: values, not frames (see .parsed)
            if handles:
                _pack_handles(handles)  # (what marshalling would refuse, refused here the same way)
            values = [s.trailer_values(in_digest) for s in sessions] if sessions else ()
            out_h, out_params, out_digest, out_trailers = self._take_reply(
                name, self.engine.execute(Command((ordinal, handles, params, values))), len(sessions),
                out_handles, ord_b, in_digest, params, sessions)
            for s, (even, cont, value) in zip(sessions, out_trailers):
                s.accept_values(out_digest, even, cont, value)
            return out_h, Reader(out_params, _response_name(name))
        trailers = b"".join([s.trailer(in_digest) for s in sessions]) if sessions else b""
        body = (_pack_handles(handles) if handles else b"") + params + trailers
        frame = _HEADER_PACK(_TAG[len(sessions)], HEADER + len(body), ordinal) + body
        if t is None:
            rsp = self.engine.execute(frame)
        else:
            rsp = self._execute_transport(t, frame, in_digest, out_handles, len(sessions), handles)
        _tag, size, rc = _HEADER_UNPACK(rsp)
        if rc:  # != TPM_SUCCESS
            for s in sessions:
                s.open = False
            raise TpmError(C.RC_NAME.get(rc, f"TPM_rc_{rc:#x}"), f"{name} failed")
        end = len(rsp) - AUTH_OUT * len(sessions)
        out_h = list(_unpack_handles(out_handles, rsp[HEADER:])) if out_handles else []
        out_params = rsp[HEADER + 4 * out_handles:end]
        if digests:
            out_digest = hostcrypto.sha1(_RC_SUCCESS, ord_b, out_params)
            self._last_digests = (in_digest, out_digest)
            for s in sessions:
                s.accept(out_digest, rsp[end:end + AUTH_OUT])
                end += AUTH_OUT
        else:
            self._last_digests = (ord_b, params, out_params)
        return out_h, Reader(out_params, f"{name} response")

    def _take_reply(self, name: str, reply: Reply, n_auth: int, out_handles: int, ord_b: bytes, in_digest: bytes,
                    params: bytes, sessions: Sequence[HostSession]) -> tuple[list[int], bytes, bytes, Sequence]:
        """The host's checks of an in-process :class:`~.parsed.Reply`, the one copy the fast-path callers
        (:meth:`call`, :meth:`_call_with_session`, :meth:`_call_with_secret`) share, in the framed path's
        order: a return code other than TPM_SUCCESS raises :class:`TpmError` (and closes ``sessions``:
        the TPM ended them), a reply without one authorization per session sent (``n_auth``) is refused,
        the ``out_handles`` handles are split from the body, and the output parameter digest
        SHA-1(returnCode || ordinal || outParams) is made when there are sessions (else kept for
        :attr:`last_out_digest` on demand). Returns the handles, the parameters' bytes, that digest
        (b"" without sessions) and the reply's trailers, which the caller verifies against its keys.

        (A call more per command than inlined copies: 0.07-0.09 us with its arguments and returned
        tuple (timeit, CPython 3.11) against about 60 us of a 2^20 hash-tree increment, 0.1%; the
        benchmark's alternating runs cannot tell it from their own noise of about 2.5%.)
        """
        rc, out_handle_bytes, out_params, out_trailers = reply
        if rc:  # != TPM_SUCCESS
            for s in sessions:
                s.open = False
            raise TpmError(C.RC_NAME.get(rc, f"TPM_rc_{rc:#x}"), f"{name} failed")
        if len(out_trailers) != n_auth:
            raise _missing_authorizations(out_trailers, n_auth)
        out_h: list[int] = []
        if out_handle_bytes or out_handles:  # (the body as the frame had it, split where the host expects)
            out_h, out_params = _split_handles(out_handles, out_handle_bytes + out_params)
        if n_auth:
            out_digest = hostcrypto.sha1(_RC_SUCCESS, ord_b, out_params)
            self._last_digests = (in_digest, out_digest)
            return out_h, out_params, out_digest, out_trailers
        self._last_digests = (ord_b, params, out_params)
        return out_h, out_params, b"", out_trailers

    def _call_with_session(self, name: str, handles: Sequence[int], params: bytes, s: HostSession,
                           out_handles: int) -> tuple[list[int], bytes]:
        """:meth:`call` with one :class:`HostSession` (not a transport), outside a transport, to this
        process's own engine (the fast path); returns the output handles and the parameters' bytes.

        What the general path does for such a call, in its order (the parameter digest, the
        handles' check, :meth:`HostSession.trailer_values`, the command, the reply's checks,
        :meth:`HostSession.accept_values`), without the per-call lists and helper frames: a
        hash-tree increment through a continued OIAP session comes here a million times a run.
        """
        ordinal = C.ORD[name]
        ord_b = _U32(ordinal)
        in_digest = hostcrypto.sha1(ord_b, params)
        if handles:
            _pack_handles(handles)  # (what marshalling would refuse, refused here the same way)
        if not s.open:
            raise TpmError("TPM_INVALID_AUTHHANDLE", f"host session {s.handle:#010x} is closed")
        odd = s._sent_odd = s.next_odd
        s.next_odd = hostcrypto.nonce()
        cont = 1 if s.cont else 0
        key = s.key
        out_h, out_params, out_digest, out_trailers = self._take_reply(
            name, self.engine.execute(Command((ordinal, handles, params, (
                (s.handle, odd, cont, hostcrypto.hmac_sha1(key, in_digest, s.nonce_even, odd, _CONTINUE[cont])),)))),
            1, out_handles, ord_b, in_digest, params, (s,))
        even, cont_b, value = out_trailers[0]
        _check_auth(key, out_digest, odd, even, cont_b, value)
        s.nonce_even = even
        s.open = cont_b != b"\x00"
        return out_h, out_params

    def _call_with_secret(self, name: str, handles: Sequence[int], params: bytes, secret_: bytes,
                          out_handles: int) -> tuple[list[int], Reader]:
        """:meth:`call` for the commonest case, one session from a bare secret, outside a transport.

        The one-shot OIAP session (continueAuthSession FALSE) is kept in locals
        instead of a :class:`HostSession`: the same frames, digests, checks and
        errors, for about a fifth less of the host's own work per command.
        """
        handle, even = self._oiap()
        odd = hostcrypto.nonce()
        ordinal = C.ORD[name]
        ord_b = _U32(ordinal)
        in_digest = hostcrypto.sha1(ord_b, params)
        engine = self.engine
        if _in_process(engine):  # the fast path: values, not frames (see .parsed)
            if handles:
                _pack_handles(handles)  # (what marshalling would refuse, refused here the same way)
            out_h, out_params, out_digest, out_trailers = self._take_reply(
                name, engine.execute(Command((ordinal, handles, params, (
                    (handle, odd, 0, hostcrypto.hmac_sha1(secret_, in_digest, even, odd, b"\x00")),)))),
                1, out_handles, ord_b, in_digest, params, ())
            _check_auth(secret_, out_digest, odd, *out_trailers[0])
            return out_h, Reader(out_params, _response_name(name))
        body = b"".join((_pack_handles(handles) if handles else b"", params, _U32(handle), odd, b"\x00",
                         hostcrypto.hmac_sha1(secret_, in_digest, even, odd, b"\x00")))
        rsp = self.engine.execute(_HEADER_PACK(C.TPM_TAG_RQU_AUTH1_COMMAND, HEADER + len(body), ordinal) + body)
        rc = _HEADER_UNPACK(rsp)[2]
        if rc:
            raise TpmError(C.RC_NAME.get(rc, f"TPM_rc_{rc:#x}"), f"{name} failed")
        end = len(rsp) - AUTH_OUT
        out_h = list(_unpack_handles(out_handles, rsp[HEADER:])) if out_handles else []
        out_params = rsp[HEADER + 4 * out_handles:end]
        out_digest = hostcrypto.sha1(_RC_SUCCESS, ord_b, out_params)
        self._last_digests = (in_digest, out_digest)
        _check_trailer(secret_, out_digest, odd, rsp[end:])
        return out_h, Reader(out_params, f"{name} response")

    @property
    def last_in_digest(self) -> bytes:
        """SHA-1(ordinal || parameters) of the last command (what its sessions and a transport log hash)."""
        d = self._last_digests
        return d[0] if len(d) == 2 else hostcrypto.sha1(d[0], d[1])

    @property
    def last_out_digest(self) -> bytes:
        """SHA-1(returnCode || ordinal || output parameters) of the last command."""
        d = self._last_digests
        return d[1] if len(d) == 2 else hostcrypto.sha1(struct.pack(">I", C.TPM_SUCCESS), d[0], d[2])

    def _execute_transport(self, t: "HostTransport", frame: bytes, h1: bytes, out_handles: int,
                           n_sessions: int, handles: Sequence[int]) -> bytes:
        """Wrap ``frame`` in TPM_ExecuteTransport (Part 3, 24.2) and log it as the TPM does.

        ``h1`` is SHA1(ORDw || DATAw), the wrapped command's parameter digest;
        the outer authorization covers SHA1(ORDet || wrappedCmdSize || H1), the
        response SHA1(RCet || ORDet || currentTicks || locality || wrappedRspSize || H2).
        """
        ord_et = _U32(C.ORD["TPM_ExecuteTransport"])
        no_data = struct.unpack(">I", frame[6:10])[0] in L.NO_DATA_ORDINALS
        if no_data:
            h1 = hostcrypto.sha1(frame[6:10])
        odd = t.next_odd  # the nonceOdd the trailer below sends (it seeds the pads)
        start = HEADER + 4 * len(handles)
        end = start if no_data else len(frame) - AUTH_IN * n_sessions
        wire = frame
        if t.alg and end > start:  # step 4: only DATAw travels encrypted
            wire = frame[:start] + crypt(t.alg, t.scheme, t.key, t.nonce_even, odd, b"in", frame[start:end]) + frame[end:]
        body = _U32(len(wire)) + wire + t.trailer(hostcrypto.sha1(ord_et, _U32(len(wire)), h1))
        rsp = self.engine.execute(struct.pack(">HII", C.TPM_TAG_RQU_AUTH1_COMMAND, HEADER + len(body),
                                              C.ORD["TPM_ExecuteTransport"]) + body)
        rc = struct.unpack(">I", rsp[6:10])[0]
        if rc != C.TPM_SUCCESS:
            t.open = False
            raise TpmError(C.RC_NAME.get(rc, f"TPM_rc_{rc:#x}"), "TPM_ExecuteTransport failed")
        r = Reader(rsp[HEADER:len(rsp) - AUTH_OUT], "TPM_ExecuteTransport response")
        ticks, locality, inner = r.raw(8), r.u32(), r.sized(1 << 16)
        rc_w = inner[6:10]
        a, b = HEADER + 4 * out_handles, len(inner) - AUTH_OUT * n_sessions
        s2 = inner[a:b] if rc_w == _U32(C.TPM_SUCCESS) and not no_data else b""
        if t.alg and s2:  # step 17: decrypt with the pad of the nonceEven this response brings
            s2 = crypt(t.alg, t.scheme, t.key, rsp[len(rsp) - AUTH_OUT:len(rsp) - AUTH_OUT + 20], odd, b"out", s2)
            inner = inner[:a] + s2 + inner[b:]
        h2 = hostcrypto.sha1(rc_w, frame[6:10], s2)
        t.accept(hostcrypto.sha1(_U32(C.TPM_SUCCESS), ord_et, ticks, _U32(locality), _U32(len(inner)), h2),
                 rsp[len(rsp) - AUTH_OUT:])
        if t.logged:
            key_handles = handles
            if frame[6:10] == _ORD_READ_INTERNAL_PUB:  # its key handle opens the parameters (libtpms' table)
                key_handles = [struct.unpack_from(">I", frame, HEADER)[0]]
            t.entries.append(L.LogEntry(h1, h2, struct.unpack(">Q", ticks)[0], locality, t.pubkey_hash(key_handles)))
        return inner

    @contextmanager
    def through(self, transport: HostTransport) -> Iterator[HostTransport]:
        """Send every command inside the block through ``transport``."""
        previous, self._through = self._through, transport
        try:
            yield transport
        finally:
            self._through = previous

    # ---- sessions ---------------------------------------------------------------
    def TPM_OIAP(self, secret_: bytes) -> HostSession:
        if self._through is not None:
            _, r = self.call("TPM_OIAP")
            return HostSession(r.u32(), r.raw(20), secret_, "OIAP")
        return HostSession(*self._oiap(), secret_, "OIAP")

    def _oiap(self) -> tuple[int, bytes]:
        """TPM_OIAP outside a transport: (authHandle, nonceEven).

        What call() would do, for the one command without parameters or
        sessions that precedes every command authorized by a bare secret: the
        same frame, errors and digests.
        """
        engine = self.engine
        if _in_process(engine):
            rc, out_handle_bytes, out, _ = engine.execute(_OIAP_COMMAND)
            if out_handle_bytes:
                out = out_handle_bytes + out
        else:
            rsp = engine.execute(_OIAP_FRAME)
            rc = _HEADER_UNPACK(rsp)[2]
            out = rsp[HEADER:]
        if rc:
            raise TpmError(C.RC_NAME.get(rc, f"TPM_rc_{rc:#x}"), "TPM_OIAP failed")
        self._last_digests = (_ORD_OIAP, b"", out)
        if len(out) >= 24:
            return _U32_FROM(out)[0], out[4:24]
        r = Reader(out, "TPM_OIAP response")  # too short: the Reader's own error
        return r.u32(), r.raw(20)

    def TPM_OSAP(self, entity_type: int, entity_value: int, secret_: bytes) -> HostSession:
        odd = hostcrypto.nonce()
        _, r = self.call("TPM_OSAP", params=_OSAP_HEAD(entity_type, entity_value) + odd)
        handle, even, even_osap = r.u32(), r.raw(20), r.raw(20)
        return HostSession(handle, even, hostcrypto.hmac_sha1(secret_, even_osap, odd), "OSAP")

    # ---- admin --------------------------------------------------------------------
    def TPM_Startup(self, kind: int = C.TPM_ST_CLEAR) -> None:
        self.call("TPM_Startup", params=Writer().u16(kind).bytes())

    def TPM_ReadPubek(self) -> rsa.RSAPublicKey:
        nonce = hostcrypto.nonce()
        _, r = self.call("TPM_ReadPubek", params=nonce)
        body = r.rest()
        pub, checksum = body[:-20], body[-20:]
        if hostcrypto.sha1(pub, nonce) != checksum:
            raise TpmError("TPM_FAIL", "TPM_ReadPubek checksum mismatch")
        return rsa_public(pubkey_modulus(pub)[1])

    def TPM_TakeOwnership(self, owner_auth: bytes, srk_auth: bytes) -> rsa.RSAPublicKey:
        ek = self.TPM_ReadPubek()
        params = (Writer().u16(0x0005).sized(hostcrypto.oaep_encrypt(ek, owner_auth))
                  .sized(hostcrypto.oaep_encrypt(ek, srk_auth))
                  .raw(_SRK_TEMPLATE).bytes())
        _, r = self.call("TPM_TakeOwnership", params=params, auth=[owner_auth])
        return rsa_public(Key12.unmarshal(r).pub)

    def TPM_GetRandom(self, n: int) -> bytes:
        _, r = self.call("TPM_GetRandom", params=Writer().u32(n).bytes())
        return r.sized()

    def TPM_Extend(self, pcr: int, digest: bytes) -> bytes:
        _, r = self.call("TPM_Extend", params=Writer().u32(pcr).raw(digest).bytes())
        return r.raw(20)

    def TPM_PCRRead(self, pcr: int) -> bytes:
        _, r = self.call("TPM_PCRRead", params=Writer().u32(pcr).bytes())
        return r.raw(20)

    def TPM_FlushSpecific(self, handle: int, resource: int = C.TPM_RT_KEY) -> None:
        self.call("TPM_FlushSpecific", handles=[handle], params=Writer().u32(resource).bytes())

    def TPM_GetPubKey(self, handle: int, auth: Auth | None = None) -> bytes:
        _, r = self.call("TPM_GetPubKey", handles=[handle], auth=[auth] if auth is not None else [])
        return r.rest()

    def TPM_OwnerReadInternalPub(self, owner_auth: Auth, handle: int) -> bytes:
        """The EK's or the SRK's TPM_PUBKEY, owner-authorized (Part 3, 14.5): TPM_GetPubKey on the
        SRK needs readSRKPub, which a fresh owner does not set."""
        _, r = self.call("TPM_OwnerReadInternalPub", params=struct.pack(">I", handle), auth=[owner_auth])
        return r.rest()

    # ---- keys -----------------------------------------------------------------------
    def TPM_CreateWrapKey(self, parent: int, parent_auth: bytes, template: Key12,
                          usage_auth: bytes, migration_auth: bytes | None = None) -> bytes:
        """Returns the wrapped TPM_KEY12 blob (load it with TPM_LoadKey2)."""
        entity = (C.TPM_ET_SRK, C.TPM_KH_SRK) if parent == C.TPM_KH_SRK else (C.TPM_ET_KEYHANDLE, parent)
        s = self.TPM_OSAP(*entity, parent_auth)
        s.cont = False
        params = (Writer().raw(s.encrypt_auth(usage_auth))
                  .raw(s.encrypt_auth(migration_auth or b"\x00" * 20, odd=True)).raw(template.marshal()).bytes())
        _, r = self.call("TPM_CreateWrapKey", handles=[parent], params=params, auth=[s])
        return r.rest()

    def TPM_LoadKey2(self, parent: int, blob: bytes, parent_auth: Auth | None = None) -> int:
        (handle,), _ = self.call("TPM_LoadKey2", handles=[parent], params=blob,
                                 auth=[parent_auth] if parent_auth is not None else [], out_handles=1)
        return handle

    def TPM_MakeIdentity(self, owner_auth: bytes, srk_auth: bytes, aik_auth: bytes,
                         label_ca_digest: bytes = b"\x00" * 20) -> tuple[bytes, bytes]:
        """Create an AIK; returns (TPM_KEY12 blob, identity binding signature)."""
        owner = self.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, owner_auth)
        owner.cont = False
        template = key_template(C.TPM_KEY_IDENTITY)
        params = Writer().raw(owner.encrypt_auth(aik_auth)).raw(label_ca_digest).raw(template.marshal()).bytes()
        _, r = self.call("TPM_MakeIdentity", params=params, auth=[srk_auth, owner])
        blob = Key12.unmarshal(r)
        return blob.marshal(), r.sized()

    def TPM_CertifyKey2(self, key: int, cert_key: int, nonce: bytes, msa_digest: bytes,
                        key_auth: Auth | None, cert_auth: Auth) -> tuple[bytes, bytes]:
        """Returns (TPM_CERTIFY_INFO2 bytes, signature)."""
        auths = [key_auth, cert_auth] if key_auth is not None else [cert_auth]
        _, r = self.call("TPM_CertifyKey2", handles=[key, cert_key],
                         params=msa_digest + nonce, auth=auths)
        body = r.rest()
        sig_len = struct.unpack(">I", body[-260:-256])[0] if len(body) >= 260 else 0
        if sig_len != 256:
            raise TpmError("TPM_FAIL", "unexpected CertifyKey2 signature size")
        return body[:-260], body[-256:]

    # ---- signing ------------------------------------------------------------------
    def TPM_Sign(self, key: int, data: bytes, auth: Auth | None) -> bytes:
        _, r = self.call("TPM_Sign", handles=[key], params=Writer().sized(data).bytes(),
                         auth=[auth] if auth is not None else [])
        return r.sized()

    def TPM_Quote(self, key: int, nonce: bytes, pcrs: Sequence[int], auth: Auth | None) -> tuple[bytes, bytes]:
        """Returns (TPM_PCR_COMPOSITE bytes, signature over TPM_QUOTE_INFO)."""
        bits = bytearray(3)
        for i in pcrs:
            bits[i // 8] |= 1 << (i % 8)
        _, r = self.call("TPM_Quote", handles=[key], params=nonce + Writer().u16(3).raw(bytes(bits)).bytes(),
                         auth=[auth] if auth is not None else [])
        sel = r.raw(5)
        values = r.sized()
        return sel + Writer().sized(values).bytes(), r.sized()

    # ---- counters ---------------------------------------------------------------------
    def TPM_CreateCounter(self, owner_auth: bytes, counter_auth: bytes, label: bytes = b"CNTR") -> tuple[int, int]:
        """Returns (countID, start value)."""
        s = self.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, owner_auth)
        s.cont = False
        _, r = self.call("TPM_CreateCounter", params=s.encrypt_auth(counter_auth) + label.ljust(4, b"\0")[:4],
                         auth=[s])
        cid = r.u32()
        r.u16(), r.raw(4)
        return cid, r.u32()

    def TPM_IncrementCounter(self, count_id: int, auth: Auth) -> int:
        _, r = self.call("TPM_IncrementCounter", params=Writer().u32(count_id).bytes(), auth=[auth])
        r.u16(), r.raw(4)
        return r.u32()

    def TPM_ReadCounter(self, count_id: int) -> int:
        _, r = self.call("TPM_ReadCounter", params=Writer().u32(count_id).bytes())
        r.u16(), r.raw(4)
        return r.u32()

    def TPM_ReleaseCounter(self, count_id: int, auth: Auth) -> None:
        self.call("TPM_ReleaseCounter", params=Writer().u32(count_id).bytes(), auth=[auth])

    # ---- protected storage ------------------------------------------------------------
    def _osap_key(self, handle: int, auth: bytes) -> HostSession:
        entity = (C.TPM_ET_SRK, C.TPM_KH_SRK) if handle == C.TPM_KH_SRK else (C.TPM_ET_KEYHANDLE, handle)
        s = self.TPM_OSAP(*entity, auth)
        s.cont = False
        return s

    def TPM_Seal(self, key: int, key_auth: bytes, data: bytes, data_auth: bytes,
                 pcr_info: bytes = b"") -> bytes:
        """Returns TPM_STORED_DATA. ``pcr_info``: a TPM_PCR_INFO to bind the data to PCRs."""
        s = self._osap_key(key, key_auth)
        params = Writer().raw(s.encrypt_auth(data_auth)).sized(pcr_info).sized(data).bytes()
        _, r = self.call("TPM_Seal", handles=[key], params=params, auth=[s])
        return r.rest()

    def TPM_Unseal(self, key: int, stored: bytes, key_auth: Auth, data_auth: Auth) -> bytes:
        _, r = self.call("TPM_Unseal", handles=[key], params=stored, auth=[key_auth, data_auth])
        return r.sized()

    def TPM_UnBind(self, key: int, enc: bytes, auth: Auth | None) -> bytes:
        _, r = self.call("TPM_UnBind", handles=[key], params=Writer().sized(enc).bytes(),
                         auth=[auth] if auth is not None else [])
        return r.sized()

    def TPM_ChangeAuth(self, parent: int, parent_auth: bytes, entity_type: int, enc: bytes,
                       old_auth: Auth, new_auth: bytes) -> bytes:
        """Re-encrypt a key's or sealed blob's encData with a new secret; returns the new encData."""
        s = self._osap_key(parent, parent_auth)
        params = Writer().u16(C.TPM_PID_ADCP).raw(s.encrypt_auth(new_auth)).u16(entity_type).sized(enc).bytes()
        _, r = self.call("TPM_ChangeAuth", handles=[parent], params=params, auth=[s, old_auth])
        return r.sized()

    # ---- migration ----------------------------------------------------------------------
    def TPM_CMK_ApproveMA(self, owner_auth: Auth, msa_digest: bytes) -> bytes:
        _, r = self.call("TPM_CMK_ApproveMA", params=msa_digest, auth=[owner_auth])
        return r.raw(20)

    def TPM_CMK_CreateKey(self, parent: int, parent_auth: bytes, template: Key12, usage_auth: bytes,
                          approval: bytes, msa_digest: bytes) -> bytes:
        s = self._osap_key(parent, parent_auth)
        params = s.encrypt_auth(usage_auth) + template.marshal() + approval + msa_digest
        _, r = self.call("TPM_CMK_CreateKey", handles=[parent], params=params, auth=[s])
        return r.rest()

    def TPM_AuthorizeMigrationKey(self, owner_auth: Auth, pubkey: bytes,
                                  scheme: int = C.TPM_MS_RESTRICT_MIGRATE) -> bytes:
        """Returns TPM_MIGRATIONKEYAUTH (the owner's approval of a destination key)."""
        _, r = self.call("TPM_AuthorizeMigrationKey", params=Writer().u16(scheme).raw(pubkey).bytes(),
                         auth=[owner_auth])
        return r.rest()

    def TPM_CMK_CreateBlob(self, parent: int, parent_auth: Auth, migration_key_auth: bytes,
                           source_digest: bytes, msa_list: bytes, enc: bytes, *,
                           scheme: int = C.TPM_MS_RESTRICT_MIGRATE, restrict_ticket: bytes = b"",
                           sig_ticket: bytes = b"") -> tuple[bytes, bytes]:
        """CMK migration (direct by default); returns (random r1, outData for the destination)."""
        params = (Writer().u16(scheme).raw(migration_key_auth).raw(source_digest)
                  .sized(msa_list).sized(restrict_ticket).sized(sig_ticket).sized(enc).bytes())
        _, r = self.call("TPM_CMK_CreateBlob", handles=[parent], params=params, auth=[parent_auth])
        return r.sized(), r.sized()

    def TPM_CMK_ConvertMigration(self, parent: int, parent_auth: Auth, restrict_ticket: bytes,
                                 migrated_key: bytes, msa_list: bytes, random: bytes,
                                 sig_ticket: bytes = b"\x00" * 20) -> bytes:
        """Returns the new encData; the loadable key is the migrated TPM_KEY12 with it.

        ``sig_ticket`` (from :meth:`TPM_CMK_CreateTicket`) is required for RSA CMKs; the
        what-if HMAC CMK converts without one (direct migration)."""
        params = (restrict_ticket + sig_ticket + migrated_key
                  + Writer().sized(msa_list).sized(random).bytes())
        _, r = self.call("TPM_CMK_ConvertMigration", handles=[parent], params=params, auth=[parent_auth])
        return r.sized()

    def TPM_CMK_CreateTicket(self, owner_auth: Auth, verification_key: bytes, signed_data: bytes,
                             signature: bytes) -> bytes:
        """A migration authority's signature over ``signed_data`` as this TPM's sigTicket (Part 3, 11.8)."""
        _, r = self.call("TPM_CMK_CreateTicket", params=verification_key + signed_data + Writer().sized(signature).bytes(),
                         auth=[owner_auth])
        return r.raw(20)

    def TPM_CreateMigrationBlob(self, parent: int, parent_auth: Auth, migration_key_auth: bytes,
                                enc: bytes, migration_auth: Auth,
                                scheme: int = C.TPM_MS_MIGRATE) -> tuple[bytes, bytes]:
        params = Writer().u16(scheme).raw(migration_key_auth).sized(enc).bytes()
        _, r = self.call("TPM_CreateMigrationBlob", handles=[parent], params=params,
                         auth=[parent_auth, migration_auth])
        return r.sized(), r.sized()

    # ---- what-if: HMAC oracle -----------------------------------------------------------
    def TPM_HMAC(self, key: int, data: bytes, auth: Auth, output_blocks: int = 1) -> bytes:
        _, r = self.call("TPM_HMAC", handles=[key], params=b"".join((_U32(len(data)), data, _U32(output_blocks))),
                         auth=[auth])
        return r.sized()

    # ---- what-if: hash tree ----------------------------------------------------------
    def TPM_ExecuteHashTree(self, key: int, mode: int, index: int, value: int, siblings: Sequence[bytes] | bytes,
                            nonce: bytes, auth: Auth, *, delta: int = 0,
                            sign: bool = True) -> tuple[bytes, int, bytes]:
        """Returns (root now held by the TPM, the tree's epoch, signature over TPM_HASHTREE_INFO).

        ``mode`` (see ``commands/hashtree.py``): 0 INIT (``auth`` = the owner
        secret, ``value`` = the depth, no siblings; empty signature), 1 READ,
        2 UPDATE (always refused), 3 INCREMENT by ``delta`` (>= 1). ``value`` is
        the counter's current value; ``sign=False`` skips the signature (batch
        attestation). ``siblings`` may come packed (20 bytes each, back to back: the wire form).
        """
        # marshalled in one pack + join (the 2^20-counter runs send a million of these)
        head = _HASHTREE_HEAD(mode | (0 if sign else 0x80), index, value, delta)
        if isinstance(siblings, bytes):
            if len(siblings) % 20:
                raise ValueError(f"packed sibling path of {len(siblings)} bytes is not a multiple of 20")
            params = b"".join((head, nonce, _U32(len(siblings) // 20), siblings))
        else:
            params = b"".join((head, nonce, _U32(len(siblings)), *siblings))
        if type(auth) is HostSession and self._through is None and _in_process(self.engine):
            out = self._call_with_session("TPM_ExecuteHashTree", [key], params, auth, 0)[1]
            if len(out) >= 28:  # root, epoch, sized signature in one unpack (a malformed one: the Reader's error)
                epoch, size = _EPOCH_SIZE(out, 20)
                if size <= ALLOC_MAX and 28 + size <= len(out):
                    return out[:20], epoch, out[28:28 + size]
            r = Reader(out, _response_name("TPM_ExecuteHashTree"))
        else:
            _, r = self.call("TPM_ExecuteHashTree", handles=[key], params=params, auth=[auth])
        return r.raw(20), r.u32(), r.sized()

    # ---- transport sessions -------------------------------------------------------------
    def TPM_EstablishTransport(self, transport_secret: bytes, *, exclusive: bool = True,
                               logged: bool = True, key: tuple[int, bytes, Auth | None] | None = None,
                               alg: int = 0, scheme: int = 0) -> HostTransport:
        """Open a transport session. ``key`` = (handle, RSA modulus, authorization or None) sends
        the secret as TPM_TRANSPORT_AUTH encrypted to that storage key, which an encrypted
        session (``alg`` TPM_ALG_MGF1 or TPM_ALG_AES128 with ``scheme`` CTR/OFB) requires."""
        attrs = ((C.TPM_TRANSPORT_LOG if logged else 0) | (C.TPM_TRANSPORT_EXCLUSIVE if exclusive else 0)
                 | (C.TPM_TRANSPORT_ENCRYPT if alg else 0))
        pub = Writer().u16(C.TPM_TAG_TRANSPORT_PUBLIC).u32(attrs).u32(alg).u16(scheme).bytes()
        handle, secret, auth = C.TPM_KH_TRANSPORT, transport_secret, []
        if key is not None:
            handle, modulus, key_auth = key
            secret = hostcrypto.oaep_encrypt(
                rsa_public(modulus), Writer().u16(C.TPM_TAG_TRANSPORT_AUTH).raw(transport_secret).bytes())
            auth = [key_auth] if key_auth is not None else []
        params = pub + Writer().sized(secret).bytes()
        if self._through is not None:
            raise TpmError("TPM_BAD_PARAMETER", "cannot establish a transport inside a transport")
        (handle,), r = self.call("TPM_EstablishTransport", handles=[handle], params=params, auth=auth,
                                 out_handles=1)
        locality = r.u32()
        ticks = r.raw(32)
        even = r.raw(20)
        t = HostTransport(handle, even, transport_secret, tick_nonce=ticks[12:32], alg=alg, scheme=scheme,
                          logged=logged)
        t.entries.append(L.LogEntry(self.last_in_digest, self.last_out_digest,
                                    struct.unpack(">Q", ticks[2:10])[0], locality))
        return t

    def TPM_ReleaseTransportSigned(self, key: int, anti_replay: bytes, transport: HostTransport,
                                   key_auth: Auth | None) -> TransportRelease:
        """Close ``transport`` and get the key's signature over its log digest and nonce."""
        if key_auth is not None and not isinstance(key_auth, HostSession):
            with self.through(transport):  # an OIAP opened outside would end exclusivity
                key_auth = self._session(key_auth)
        auths: list[Auth] = ([key_auth] if key_auth is not None else []) + [transport]
        transport.cont = False
        previous, self._through = self._through, None
        try:
            _, r = self.call("TPM_ReleaseTransportSigned", handles=[key], params=anti_replay, auth=auths)
        finally:
            self._through = previous if previous is not transport else None
        locality = r.u32()
        ticks = r.raw(32)
        sig = r.sized()
        d = L.release_output(L.replay(transport.entries, transport.tick_nonce), ticks, self.last_in_digest, locality)
        transport.open = False
        return TransportRelease(sig, ticks, anti_replay, d)

