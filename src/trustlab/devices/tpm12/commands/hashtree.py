"""TPM_ExecuteHashTree: the what-if command of Sarmenta et al. for hash-tree counters.

The TPM holds only the root of a tree of ``2**depth`` UINT64 counters (root,
depth and epoch persisted in NV); leaves and inner nodes live in untrusted
host memory (see :mod:`..merkle` for the conventions; a leaf is
``counter_leaf(value)``). The TPM *executes* the counter operation itself,
as Sarmenta et al.'s design does: the host names a counter and its current
value and hands over the sibling path, and the TPM computes the new value.
Modes:

* ``INIT`` (0, owner-authorized): install the all-zero tree of ``depth``
  levels (passed in the ``value`` field) and bump the tree's *epoch*. The
  epoch is signed with every answer, so an owner who re-initialises to reset
  all counters produces certificates a verifier that knows the epoch rejects;
* ``READ`` (1): check ``value`` at ``index`` against the held root (1 leaf +
  ``depth`` node hashes), then sign
  TPM_HASHTREE_INFO(epoch, nonce, index, value, value, root);
* ``UPDATE`` (2) is **refused** (TPM_BAD_MODE). A generic "install this new
  leaf" lets the host, which holds the key's authorization, roll a counter
  back *through the TPM* and obtain a valid signature for the old value —
  the earlier design had it and ``tests/counters/test_attacks.py`` kept the
  exploit; now it keeps the refusal;
* ``INCREMENT`` (3): as READ, then ``new = value + delta`` with
  ``1 <= delta`` and ``new < 2**64`` (``delta`` 1: a monotonic counter; larger:
  the paper's *arithmetic* counters), recompute the root over the same
  siblings (as many hashes again), store it, sign (epoch, nonce, index,
  value, new, root).

So an INCREMENT costs ``2 (depth + 1)`` hashes + a signature, a READ
``depth + 1`` + a signature — the paper's ``(2 log2 nc) Tth + Tts`` and
``(log2 nc) Tth + Tts`` (the leaf hashes are the structural extra the
counters app's model counts) — plus the usual dispatcher and authorization
costs, all charged by the primitives. A stale path or a value that is not
the current one (rollback, fork) fails with TPM_BAD_HASHTREE.

``FLAG_NOSIGN`` (0x80 on the mode) skips the signature: only for the batch
attestation of the 2^20-counter scale run, which signs every K-th request.

Parameters: mode u8, index u64, value u64, delta u64, nonce 20, sibling
count u32, siblings (20 each) — ``69 + 20 depth`` bytes. Response: root 20,
epoch u32, sized signature.
"""

from __future__ import annotations

import hmac as _hmac
import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command

MODE_INIT, MODE_READ, MODE_UPDATE, MODE_INCREMENT = 0, 1, 2, 3
FLAG_NOSIGN = 0x80
DEPTH_KEY, EPOCH_KEY = "hashtree_depth", "hashtree_epoch"
_HEAD = struct.Struct(">BQQQ").unpack
_FIXED = struct.Struct(">BQQQ20sI")  # mode, index, value, delta, nonce, sibling count: 49 bytes
_FIXED_SIZE, _UNPACK_FIXED = _FIXED.size, _FIXED.unpack_from
_MAX_DEPTH, _MAX_VALUE, _RootMemo = merkle.MAX_DEPTH, merkle.MAX_VALUE, merkle.RootMemo
_EPOCH_SIZE = struct.Struct(">II").pack


_SIGNERS = (C.TPM_KEY_IDENTITY, C.TPM_KEY_SIGNING)


def _answer(root: bytes, epoch: int, sig: bytes) -> Response:
    return Response(root + _EPOCH_SIZE(epoch, len(sig)) + sig)  # root, epoch, sized signature (positional: no dict)


@tpm_command("TPM_ExecuteHashTree", handles=1, auth=(1,))
def execute_hash_tree(tpm, req: Request) -> Response:
    raw = req.param_bytes
    fixed = _UNPACK_FIXED(raw) if len(raw) >= _FIXED_SIZE else None
    if fixed is not None and fixed[5] <= _MAX_DEPTH and len(raw) == _FIXED_SIZE + 20 * fixed[5]:
        # a well-formed frame (every one a run sends): one unpack, the same values as reading field by field
        mode_flags, index, value, delta, nonce, count = fixed
        path = raw[_FIXED_SIZE:]
    else:  # field by field, so a malformed frame fails where and as it always did
        p = req.params
        mode_flags, index, value, delta = _HEAD(p.raw(25))  # mode u8, index/value/delta u64
        nonce = p.raw(20)
        count = p.u32()
        if count > merkle.MAX_DEPTH:
            raise TpmError("TPM_BAD_PARAMETER", f"path of {count} siblings exceeds depth {merkle.MAX_DEPTH}")
        path = p.raw(20 * count)  # the siblings, 20 bytes each
        p.end()
    mode, sign = mode_flags & 0x7F, not mode_flags & FLAG_NOSIGN
    st = tpm.state
    if mode == MODE_INIT:
        req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
        if not 1 <= value <= merkle.MAX_DEPTH:
            raise TpmError("TPM_BAD_PARAMETER", f"INIT depth {value} outside 1..{merkle.MAX_DEPTH}")
        epoch = int(st.extra.get(EPOCH_KEY, "0")) + 1
        defaults = merkle.counter_defaults(value, tpm.crypto.sha1)
        st.hashtree_root, st.hashtree_memo = defaults[-1], merkle.RootMemo(value, defaults)
        st.extra[DEPTH_KEY], st.extra[EPOCH_KEY] = str(value), str(epoch)
        tpm.mark_dirty()
        return _answer(st.hashtree_root, epoch, b"")
    if mode == MODE_UPDATE:
        raise TpmError("TPM_BAD_MODE", "UPDATE would install a host-chosen leaf (a counter rollback); "
                                       "use INCREMENT, the TPM computes the new value")
    if mode not in (MODE_READ, MODE_INCREMENT):
        raise TpmError("TPM_BAD_MODE", f"TPM_ExecuteHashTree mode {mode}")
    handle = req.handles[0]
    key = tpm.key(handle)
    req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
    if key.blob.usage not in _SIGNERS or key.private is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", "TPM_ExecuteHashTree signs with an identity or signing key")
    root = st.hashtree_root
    if root is None or DEPTH_KEY not in st.extra:
        raise TpmError("TPM_BAD_HASHTREE", "no hash tree (INIT first)")
    depth, epoch = int(st.extra[DEPTH_KEY]), int(st.extra[EPOCH_KEY])
    if count != depth:
        raise TpmError("TPM_BAD_PARAMETER", f"path has {count} siblings, the tree has depth {depth}")
    if index >> depth:
        raise TpmError("TPM_BAD_PARAMETER", f"counter {index} outside a tree of {1 << depth} counters")
    # Both roots in one pass over the path (old: check it, new: install it); every hash is one
    # SHA-1 block (a 9-byte leaf, 41-byte nodes), so the charge below is exactly what hashing
    # them one by one charged.
    incrementing = mode == MODE_INCREMENT
    delta_ok = 1 <= delta and value + delta <= _MAX_VALUE
    new = value + delta if incrementing and delta_ok else value
    # (the host-side RootMemo compares the supplied siblings with the upper levels this TPM
    # computed instead of hashing them: same roots, so the same answer, error and charge)
    memo = st.hashtree_memo
    if not isinstance(memo, _RootMemo) or memo.depth != depth or memo.root != root:
        memo = st.hashtree_memo = None
        old_root, new_root = merkle.counter_roots_packed(index, value, new, path)
    else:
        old_root, new_root = memo.roots(index, value, new, path)
    # charged in one call: depth + 1 blocks for the check (also when it or the delta fails), as many
    # again when the new root is installed (the blocks only add up until the command's flush)
    crypto = tpm.crypto
    proven = _hmac.compare_digest(old_root, root)
    installs = proven and incrementing and delta_ok
    crypto.charge_hash_blocks(2 * (depth + 1) if installs else depth + 1)
    if not proven:
        raise TpmError("TPM_BAD_HASHTREE", f"counter {index} = {value} and its path do not match the held root")
    if incrementing:
        if not delta_ok:
            raise TpmError("TPM_BAD_PARAMETER", f"delta {delta}: counters only go up, within 64 bits")
        root = st.hashtree_root = new_root
        if memo is not None and not memo.commit(new_root):
            st.hashtree_memo = None
        tpm.mark_dirty()
    sig = crypto.rsa_sign(key.private, crypto.sha1(merkle.hashtree_info(epoch, nonce, index, value, new, root))) \
        if sign else b""
    return _answer(root, epoch, sig)
