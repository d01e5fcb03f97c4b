"""Authorization sessions inside the TPM: OIAP, OSAP and transport (Part 1, 13-14; Part 3, 18, 24).

Every authorized command carries, per session, ``authHandle, nonceOdd,
continueAuthSession, authValue`` with ``authValue = HMAC-SHA1(key,
inParamDigest || nonceEven || nonceOdd || continue)``. For OIAP the key is the
entity's usage secret; for OSAP it is the shared secret
``HMAC(entity secret, nonceEvenOSAP || nonceOddOSAP)`` fixed when the session
opened, and the session is bound to that one entity. Handlers state which
secret each session must prove (``req.auth.check``); the dispatcher refuses a
command whose handler left a session unchecked, so a new command cannot
forget its authorization. Each response rolls nonceEven and is HMACed back.
"""

from __future__ import annotations

import hmac as _hmac
from dataclasses import dataclass, field

from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.primitives import Primitives, xor

_BYTE = [bytes((i,)) for i in range(256)]
_compare_digest = _hmac.compare_digest


@dataclass(slots=True)  # (slots: no per-instance dict; these and the uses below are built per command)
class Session:
    handle: int
    kind: str  # "OIAP" | "OSAP" | "TRANSPORT"
    nonce_even: bytes
    shared_secret: bytes | None = None
    entity: tuple[int, int] | None = None
    # transport sessions
    auth_secret: bytes | None = None
    attributes: int = 0
    digest: bytes = b"\x00" * 20
    alg: int = 0  # encrypted transport: TPM_ALG_MGF1 or TPM_ALG_AES128, with encScheme
    scheme: int = 0
    next_even: bytes | None = None  # a nonceEven the command already chose (encrypted responses)


@dataclass(slots=True)
class SessionUse:
    session: Session | None  # None: the command named a handle the TPM does not have
    nonce_odd: bytes
    cont: int
    value: bytes
    key: bytes | None = None  # set once checked
    handle: int = 0


@dataclass(slots=True)
class AuthContext:
    """The authorization sessions of one command, as handlers use them."""

    crypto: Primitives
    in_digest: bytes | None
    uses: list[SessionUse] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.uses)

    def check(self, i: int, secret: bytes, entity: tuple[int, int] | None = None) -> None:
        """Prove session ``i`` knows ``secret`` (OIAP) or was opened on ``entity`` (OSAP)."""
        if i >= len(self.uses):
            raise TpmError("TPM_AUTHFAIL" if i == 0 else "TPM_AUTH2FAIL",
                           f"command needs authorization session #{i + 1}")
        use = self.uses[i]
        s = use.session
        if s is None:
            self.session(i)  # raises TPM_INVALID_AUTHHANDLE
        if s.kind == "OSAP":
            if entity is not None and s.entity != entity:
                raise TpmError("TPM_AUTHFAIL" if i == 0 else "TPM_AUTH2FAIL",
                               "OSAP session was opened for another entity")
            key = s.shared_secret
        elif s.kind == "OIAP":
            key = secret
        else:
            raise TpmError("TPM_INVALID_AUTHHANDLE", "a transport session cannot authorize this")
        expect = self.crypto.hmac(key, self.in_digest, s.nonce_even, use.nonce_odd, _BYTE[use.cont])
        if not _compare_digest(expect, use.value):
            raise TpmError("TPM_AUTHFAIL" if i == 0 else "TPM_AUTH2FAIL", "wrong authorization data",
                           dictionary=True)
        use.key = key

    def session(self, i: int) -> Session:
        """The TPM's session behind trailer ``i``, or TPM_INVALID_AUTHHANDLE (Part 2, 16)."""
        s = self.uses[i].session
        if s is None:
            raise TpmError("TPM_INVALID_AUTHHANDLE", f"no session {self.uses[i].handle:#010x}")
        return s

    def check_transport(self, i: int, session: Session, in_digest: bytes | None = None,
                        code: str = "TPM_AUTHFAIL") -> None:
        """Prove trailer ``i`` knows the transport session's authData (over ``in_digest`` if given)."""
        use = self.uses[i]
        if use.session is not session or session.kind != "TRANSPORT":
            raise TpmError("TPM_INVALID_AUTHHANDLE", "expected the transport session")
        expect = self.crypto.hmac(session.auth_secret, in_digest if in_digest is not None else self.in_digest,
                                  session.nonce_even, use.nonce_odd, bytes([use.cont]))
        if not _hmac.compare_digest(expect, use.value):
            raise TpmError(code, "wrong transport session authorization", dictionary=True)
        use.key = session.auth_secret

    def decrypt_auth(self, i: int, enc_auth: bytes, odd: bool = False) -> bytes:
        """ADIP (Part 1, 13.8): encAuth XOR SHA1(sharedSecret || nonceEven [or nonceOdd])."""
        use = self.uses[i]
        if self.session(i).kind != "OSAP":
            raise TpmError("TPM_AUTHFAIL",
                           "new secrets must be sent under an OSAP session")
        pad = self.crypto.sha1(use.session.shared_secret,
                               use.nonce_odd if odd else use.session.nonce_even)
        return xor(enc_auth, pad)
