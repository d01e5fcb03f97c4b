"""TPM_ExecuteHashTree: the what-if command of Sarmenta et al. for hash-tree counters.

The TPM holds only the root (persisted in NV); leaves and inner nodes live in
untrusted host memory (see :mod:`..merkle` for the conventions). Modes:

* ``INIT`` (owner-authorized): set the root, e.g. the empty tree's root;
* ``READ``: check that ``leaf`` at ``index`` is under the held root (depth
  hashes), then sign TPM_HASHTREE_INFO(nonce, index, leaf, root);
* ``UPDATE``: check ``old leaf`` as in READ, recompute the root with ``new
  leaf`` over the same siblings (depth more hashes), store it, sign. This is
  an authenticated *write*: whoever holds the key's secret may install any
  leaf, including an older one — fine for data the key holder owns, wrong
  for counters a host must not roll back;
* ``INCREMENT``: the monotonic form: the first 8 bytes of ``old leaf`` carry
  the counter's current value ``v``; the TPM checks ``counter_leaf(v)``
  under the root and installs ``counter_leaf(v + 1)`` itself, so a host can
  never move a counter backwards (2 more leaf hashes than UPDATE).

So an update costs ``2 * depth`` node hashes + a signature, a read ``depth``
+ a signature — the paper's ``(2 log2 nc) Tth + Tts`` and ``(log2 nc) Tth +
Tts`` — plus the usual dispatcher and authorization costs, all charged by the
primitives. A stale path (rollback, fork) fails with TPM_BAD_HASHTREE.
"""

from __future__ import annotations

import hmac as _hmac

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

MODE_INIT, MODE_READ, MODE_UPDATE, MODE_INCREMENT = 0, 1, 2, 3


@tpm_command("TPM_ExecuteHashTree", handles=1, auth=(1,))
def execute_hash_tree(tpm, req: Request) -> Response:
    p = req.params
    mode, index = p.u8(), p.u32() << 32 | p.u32()
    old_leaf, new_leaf, nonce = p.raw(20), p.raw(20), p.raw(20)
    count = p.u32()
    if count > merkle.MAX_DEPTH:
        raise TpmError("TPM_BAD_PARAMETER", f"path of {count} siblings exceeds depth {merkle.MAX_DEPTH}")
    siblings = [p.raw(20) for _ in range(count)]
    p.end()
    if mode == MODE_INIT:
        req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
        tpm.state.hashtree_root = new_leaf
        tpm.mark_dirty()
        return Response(params=new_leaf + Writer().sized(b"").bytes())
    key = tpm.key(req.handles[0])
    req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    if key.blob.usage not in (C.TPM_KEY_IDENTITY, C.TPM_KEY_SIGNING) or key.private is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", "TPM_ExecuteHashTree signs with an identity or signing key")
    root = tpm.state.hashtree_root
    if root is None:
        raise TpmError("TPM_BAD_HASHTREE", "no hash tree root is set (INIT first)")
    if mode not in (MODE_READ, MODE_UPDATE, MODE_INCREMENT):
        raise TpmError("TPM_BAD_PARAMETER", f"mode {mode}")
    if mode == MODE_INCREMENT:
        value = int.from_bytes(old_leaf[:8], "big")
        if old_leaf[8:] != bytes(12) or value == (1 << 64) - 1:
            raise TpmError("TPM_BAD_PARAMETER", "INCREMENT takes a UINT64 value below 2^64 - 1")
        old_leaf = merkle.counter_leaf(value, tpm.crypto.sha1)
        new_leaf = merkle.counter_leaf(value + 1, tpm.crypto.sha1)
    try:
        implied = merkle.root_from_path(index, old_leaf, siblings, tpm.crypto.sha1)
    except ValueError as e:
        raise TpmError("TPM_BAD_PARAMETER", str(e)) from None
    if not _hmac.compare_digest(implied, root):
        raise TpmError("TPM_BAD_HASHTREE", f"leaf {index} and path do not match the held root")
    leaf = old_leaf
    if mode in (MODE_UPDATE, MODE_INCREMENT):
        root = merkle.root_from_path(index, new_leaf, siblings, tpm.crypto.sha1)
        tpm.state.hashtree_root = root
        tpm.mark_dirty()
        leaf = new_leaf
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(merkle.hashtree_info(nonce, index, leaf, root)))
    return Response(params=root + Writer().sized(sig).bytes())
