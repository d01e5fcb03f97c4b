"""The command registry: how a researcher adds a TPM command in a few lines.

::

    from trustlab.devices.tpm12.registry import tpm_command, Response

    @tpm_command("TPM_MyIdea", ordinal=0x20000010, handles=1, auth=(1,))
    def my_idea(tpm, req):
        key = tpm.key(req.handles[0])
        req.auth.check(0, key.usage_auth)
        data = req.params.sized()
        digest = tpm.crypto.sha1(data)          # hashing is charged here
        sig = tpm.crypto.rsa_sign(key.private, digest)   # and rsa_sign here
        return Response(params=Writer().sized(sig).bytes())

The function never mentions time: the dispatcher charges the invocation
overhead and the wire bytes; the primitives charge the crypto. ``handles`` is
how many leading UINT32 handles the request carries (excluded from the
parameter digest, as Part 1 specifies); ``auth`` lists the accepted numbers of
authorization sessions (0, 1, 2). Registering an existing name replaces it
(a what-if variant of a TCG command).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.wire import Reader

if TYPE_CHECKING:  # pragma: no cover
    from trustlab.devices.tpm12.sessions import AuthContext


@dataclass(slots=True)  # (slots: one is built per command; no per-instance dict)
class Request:
    """A parsed command as a handler sees it."""

    name: str
    ordinal: int
    handles: list[int]
    params: Reader
    param_bytes: bytes
    auth: "AuthContext"
    in_digest: bytes | None = None
    locality: int = 0
    transported: bool = False  # wrapped in TPM_ExecuteTransport


@dataclass(slots=True)
class Response:
    """What a handler returns: output handles (not digested) and parameters.

    (The hot handlers write ``Response(params)``: a class called with keywords
    builds a dict per call, ~0.2 us on every command.)
    """

    params: bytes = b""
    handles: bytes = b""
    # outParamDigest, for commands that define their own (TPM_ExecuteTransport, Part 3, 24.2 step 15)
    out_digest: bytes | None = None


# A handler receives the engine (typed Any: the registry sits below the engine, which imports it)
Handler = Callable[[Any, Request], Response]


@dataclass(frozen=True)
class CommandSpec:
    name: str
    ordinal: int
    handler: Handler
    handles: int
    auth: tuple[int, ...]
    transport_ok: bool = True
    own_digests: bool = False  # the handler computes inParamDigest/outParamDigest (TPM_ExecuteTransport)


_BY_ORDINAL: dict[int, CommandSpec] = {}
_BY_NAME: dict[str, CommandSpec] = {}


def tpm_command(name: str, *, ordinal: int | None = None, handles: int = 0,
                auth: tuple[int, ...] = (0,), transport_ok: bool = True,
                own_digests: bool = False) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the implementation of TPM command ``name``."""
    code = ordinal if ordinal is not None else C.ORD.get(name)
    if code is None:
        raise ValueError(f"{name}: give ordinal= (not a known TPM 1.2 ordinal)")

    def deco(fn: Handler) -> Handler:
        spec = CommandSpec(name, code, fn, handles, tuple(auth), transport_ok, own_digests)
        old = _BY_NAME.pop(name, None)
        if old is not None:
            _BY_ORDINAL.pop(old.ordinal, None)
        _BY_ORDINAL[code] = spec
        _BY_NAME[name] = spec
        C.ORD.setdefault(name, code)
        return fn

    return deco


def by_ordinal(ordinal: int) -> CommandSpec | None:
    _ensure_loaded()
    return _BY_ORDINAL.get(ordinal)


def table() -> dict[int, CommandSpec]:
    """The live ordinal -> command table (the dispatcher's lookup; registrations update it)."""
    _ensure_loaded()
    return _BY_ORDINAL


def by_name(name: str) -> CommandSpec | None:
    _ensure_loaded()
    return _BY_NAME.get(name)


def names() -> list[str]:
    _ensure_loaded()
    return sorted(_BY_NAME)


_loaded = False


def _ensure_loaded() -> None:
    """Import the shipped command modules once (they register on import)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from trustlab.devices.tpm12 import commands
    from trustlab.plugins import import_submodules

    import_submodules(commands)
