"""TPM_HashTreeCounter: the counter-aware hash-tree command the scheme needs (what-if).

Why not TPM_ExecuteHashTree alone? That command (issue 3's engine) verifies a
host-supplied *old leaf* against the held root and installs any host-supplied
*new leaf*, signing only the new one. It keeps host memory honest, but the TPM
never sees a counter: a hostile host can UPDATE a leaf back to an older value
through the TPM itself and obtain a perfectly valid signature for the rolled-
back counter. ``tests/counters/test_attacks.py`` shows this double spend.
Sarmenta et al.'s TPM executes the counter operation itself, so this module
adds that command with the engine's own extension API (``tpm_command``); it is
timed by the engine's primitives like any other command.

The TPM interprets a leaf as a counter: ``leaf = leaf_hash(UINT64 value)``
(the conventions of :mod:`trustlab.devices.tpm12.merkle`). Its root and depth
live in the TPM's persistent state, apart from TPM_ExecuteHashTree's root, so
the generic command cannot touch the counters. Modes:

* ``INIT`` (owner-authorized): install the all-zero tree of ``depth`` levels;
* ``READ``: check ``value`` at ``index`` against the root (depth + 1 hashes),
  sign TPM_HASHTREE_COUNTER_INFO("HCTR", nonce, index, value, value, root);
* ``ADD``: as READ, then ``new = value + delta`` with ``delta >= 1`` (the
  TPM refuses anything else: counters only go up), recompute the root (depth
  + 1 more hashes), store it, sign (nonce, index, value, new, root). ``delta``
  1 is INCREMENT; larger deltas are the paper's *arithmetic* counters.

``FLAG_NOSIGN`` skips the signature (used only by the batch mode of the
2^20-counter scale run, which attests every K-th request).
"""

from __future__ import annotations

import hmac as _hmac
import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

ORDINAL = 0x20000010
NAME = "TPM_HashTreeCounter"
MODE_INIT, MODE_READ, MODE_ADD = 0, 1, 2
FLAG_NOSIGN = 0x80
MAX_VALUE = (1 << 64) - 1
_ROOT, _DEPTH = "hashtree_counter_root", "hashtree_counter_depth"


def encode_value(value: int) -> bytes:
    return struct.pack(">Q", value)


def counter_leaf(value: int, h=merkle.sha1) -> bytes:
    return merkle.leaf_hash(encode_value(value), h)


def counter_info(nonce: bytes, index: int, old: int, new: int, root: bytes) -> bytes:
    """TPM_HASHTREE_COUNTER_INFO: what the TPM signs for a counter operation."""
    return b"HCTR" + nonce + struct.pack(">QQQ", index, old, new) + root


def empty_root(depth: int) -> bytes:
    """Root of a tree whose counters are all zero."""
    return _defaults(depth)[-1]


def _defaults(depth: int, h=merkle.sha1) -> list[bytes]:
    nodes = [counter_leaf(0, h)]
    for _ in range(depth):
        nodes.append(merkle.node_hash(nodes[-1], nodes[-1], h))
    return nodes


@tpm_command(NAME, ordinal=ORDINAL, handles=1, auth=(1,))
def hash_tree_counter(tpm, req: Request) -> Response:
    p = req.params
    mode_flags = p.u8()
    mode, nosign = mode_flags & 0x7F, bool(mode_flags & FLAG_NOSIGN)
    index = p.u32() << 32 | p.u32()
    value = p.u32() << 32 | p.u32()
    delta = p.u32() << 32 | p.u32()
    nonce = p.raw(20)
    count = p.u32()
    if count > merkle.MAX_DEPTH:
        raise TpmError("TPM_BAD_PARAMETER", f"path of {count} siblings exceeds depth {merkle.MAX_DEPTH}")
    siblings = [p.raw(20) for _ in range(count)]
    p.end()
    st = tpm.state
    if mode == MODE_INIT:
        req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
        if not 1 <= count <= merkle.MAX_DEPTH:
            raise TpmError("TPM_BAD_PARAMETER", "INIT takes the depth as the sibling count (>= 1)")
        root = _defaults(count, tpm.crypto.sha1)[-1]
        st.extra[_ROOT], st.extra[_DEPTH] = root.hex(), str(count)
        tpm.mark_dirty()
        return Response(params=root + Writer().sized(b"").bytes())
    key = tpm.key(req.handles[0])
    req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    if key.blob.usage not in (C.TPM_KEY_IDENTITY, C.TPM_KEY_SIGNING) or key.private is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"{NAME} signs with an identity or signing key")
    if _ROOT not in st.extra:
        raise TpmError("TPM_BAD_HASHTREE", "no counter tree (INIT first)")
    root, depth = bytes.fromhex(st.extra[_ROOT]), int(st.extra[_DEPTH])
    if count != depth:
        raise TpmError("TPM_BAD_PARAMETER", f"path has {count} siblings, the counter tree has depth {depth}")
    if mode not in (MODE_READ, MODE_ADD):
        raise TpmError("TPM_BAD_PARAMETER", f"mode {mode}")
    try:
        implied = merkle.root_from_path(index, counter_leaf(value, tpm.crypto.sha1), siblings, tpm.crypto.sha1)
    except ValueError as e:
        raise TpmError("TPM_BAD_PARAMETER", str(e)) from None
    if not _hmac.compare_digest(implied, root):
        raise TpmError("TPM_BAD_HASHTREE", f"counter {index} = {value} and its path do not match the held root")
    new = value
    if mode == MODE_ADD:
        if delta < 1 or value + delta > MAX_VALUE:
            raise TpmError("TPM_BAD_PARAMETER", f"delta {delta}: counters only go up, within 64 bits")
        new = value + delta
        root = merkle.root_from_path(index, counter_leaf(new, tpm.crypto.sha1), siblings, tpm.crypto.sha1)
        st.extra[_ROOT] = root.hex()
        tpm.mark_dirty()
    sig = b"" if nosign else tpm.crypto.rsa_sign(
        key.private, tpm.crypto.sha1(counter_info(nonce, index, value, new, root)))
    return Response(params=root + Writer().sized(sig).bytes())


def call(tpm, key: int, auth, mode: int, index: int, value: int, delta: int, nonce: bytes,
         siblings: list[bytes], sign: bool = True) -> tuple[bytes, bytes]:
    """Host side: marshal, send through the client (authorization handled), unmarshal."""
    w = (Writer().u8(mode | (0 if sign else FLAG_NOSIGN)).u32(index >> 32).u32(index & 0xFFFFFFFF)
         .u32(value >> 32).u32(value & 0xFFFFFFFF).u32(delta >> 32).u32(delta & 0xFFFFFFFF)
         .raw(nonce).u32(len(siblings)))
    for s in siblings:
        w.raw(s)
    C.ORD.setdefault(NAME, ORDINAL)
    _, r = tpm.call(NAME, handles=[key], params=w.bytes(), auth=[auth])
    return r.raw(20), r.sized()
