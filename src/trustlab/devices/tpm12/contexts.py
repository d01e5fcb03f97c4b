"""TPM_STCLEAR_DATA's context bookkeeping (Part 2, 7.5-7.6; Part 3, 21): what TPM_Startup(ST_CLEAR) resets.

``nonce_key`` / ``nonce_session`` bind saved contexts to this boot (libtpms:
contextNonceKey, contextNonceSession, drawn at the first save); ``count`` is the
last contextCount handed out and ``saved`` the counts of session contexts saved
and not yet reloaded (contextList, TPM_MIN_SESSION_LIST entries, 128 as in libtpms), so a session
context loads at most once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.devices.tpm12.sessions import Session

CONTEXT_LIST = 128  # TPM_MIN_SESSION_LIST as libtpms builds it (src/tpm_library_conf.h; the spec minimum is 16)


@dataclass
class ContextState:
    nonce_key: bytes | None = None
    nonce_session: bytes | None = None
    count: int = 0
    saved: list[int] = field(default_factory=list)


def session_to_json(s: Session) -> dict:
    """An authorization session's whole state (the context blob's encrypted internal data)."""
    hexed = lambda b: b.hex() if b is not None else None  # noqa: E731
    return {"handle": s.handle, "kind": s.kind, "nonce_even": s.nonce_even.hex(),
            "shared_secret": hexed(s.shared_secret), "entity": list(s.entity) if s.entity else None,
            "auth_secret": hexed(s.auth_secret), "attributes": s.attributes, "digest": s.digest.hex(),
            "alg": s.alg, "scheme": s.scheme, "next_even": hexed(s.next_even)}


def session_from_json(doc: dict) -> Session:
    unhex = lambda v: bytes.fromhex(v) if v is not None else None  # noqa: E731
    return Session(doc["handle"], doc["kind"], bytes.fromhex(doc["nonce_even"]), unhex(doc["shared_secret"]),
                   tuple(doc["entity"]) if doc["entity"] else None, unhex(doc["auth_secret"]), doc["attributes"],
                   bytes.fromhex(doc["digest"]), doc["alg"], doc["scheme"], unhex(doc["next_even"]))
