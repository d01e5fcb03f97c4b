"""The TPM's persistent state: what a power cycle must not lose, and how it is serialised.

Kept apart from the dispatcher (:mod:`.engine`) so that command modules can use
it without importing the engine (which imports the command registry): the
layering is ``state``, ``registry`` <- ``commands`` <- ``engine``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.errors import TrustlabError

if TYPE_CHECKING:
    from trustlab.devices.tpm12.merkle import RootMemo

STATE_VERSION = 2
LOCKOUT_THRESHOLD = 5  # failed authorizations tolerated before the dictionary-attack defence (as libtpms)

_json_str = json.encoder.encode_basestring_ascii  # a JSON string literal, in C

_DER_CACHE: dict[int, tuple[rsa.RSAPrivateKey, str]] = {}


def _der(key: rsa.RSAPrivateKey) -> str:
    """PKCS#8 DER (hex) of a key; cached, since the state is saved after every counter bump."""
    hit = _DER_CACHE.get(id(key))
    if hit is None or hit[0] is not key:
        hit = (key, key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()).hex())
        _DER_CACHE[id(key)] = hit
    return hit[1]


def _hex_json(value: str | None) -> str:
    """``json.dumps`` of a hex string or None (hex digits need no escaping)."""
    return "null" if value is None else f'"{value}"'


@lru_cache(maxsize=1024)
def _counter_head(label: bytes, auth: bytes) -> str:
    """A counter's JSON up to its value (label and authData hex never change once it exists)."""
    return f'["{label.hex()}", "{auth.hex()}", '


def _undo_der(hexed: str) -> rsa.RSAPrivateKey:
    key = serialization.load_der_private_key(bytes.fromhex(hexed), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


@dataclass
class Counter:
    label: bytes
    auth: bytes
    value: int


@dataclass
class PersistentState:
    """Everything a power cycle must not lose."""

    ek: rsa.RSAPrivateKey | None = None
    owner_auth: bytes | None = None
    tpm_proof: bytes | None = None
    srk: rsa.RSAPrivateKey | None = None
    srk_auth: bytes = b"\x00" * 20
    counters: dict[int, Counter] = field(default_factory=dict)
    next_counter_id: int = 1
    hashtree_root: bytes | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # Not state: the host's cache of the hash tree's upper levels under hashtree_root
    # (merkle.RootMemo; TPM_ExecuteHashTree). Never serialised, so a state read back from
    # NV (a restart, a rolled-back save) starts without it.
    hashtree_memo: RootMemo | None = field(default=None, compare=False, repr=False)

    def to_bytes(self) -> bytes:
        """One JSON document; the part that changes only at ownership (keys, secrets) is cached.

        Counters are saved after every increment, and re-encoding two RSA keys
        each time would dominate a counter command's simulation cost. And when
        only the hash-tree root changed since the last document (every
        TPM_ExecuteHashTree INCREMENT), the new one is the last with the root's
        40 hex digits replaced: the same bytes as building it afresh.
        """
        static_id = (self.ek, self.srk, self.owner_auth, self.tpm_proof, self.srk_auth)
        cached = getattr(self, "_static_json", None)  # (identity of the static fields, their JSON)
        # (a tuple compare: identical objects match at once; equal values give the same JSON anyway)
        if cached is None or cached[0] != static_id:
            # json.dumps(..., sort_keys=True) of these five, written out: every value is null or a hex
            # string, which JSON quotes without escapes (the encoder's scan of two ~2.4 KB DER hex
            # strings per new TPM was ~7% of an oracle run's host work)
            static = (f'{{"ek": {_hex_json(_der(self.ek) if self.ek else None)}, '
                      f'"owner_auth": {_hex_json(self.owner_auth.hex() if self.owner_auth else None)}, '
                      f'"srk": {_hex_json(_der(self.srk) if self.srk else None)}, '
                      f'"srk_auth": {_hex_json(self.srk_auth.hex())}, '
                      f'"tpm_proof": {_hex_json(self.tpm_proof.hex() if self.tpm_proof else None)}}}')
            cached = self._static_json = (static_id, static)
        # everything but the root, as values (Counter objects are mutable: their fields, not them)
        rest = (static_id, [(k, c.label, c.auth, c.value) for k, c in self.counters.items()],
                self.next_counter_id)
        last = getattr(self, "_last_doc", None)  # (rest, copy of extra, root, document, root's offset)
        root = self.hashtree_root
        if last is not None and last[0] == rest and last[1] == self.extra:
            if last[2] == root:
                return last[3]
            if root is not None and last[2] is not None and len(root) == len(last[2]):
                at, view = last[4], memoryview(last[3])
                doc = b"".join((view[:at], root.hex().encode(), view[at + 2 * len(root):]))  # one copy
                self._last_doc = (rest, last[1], root, doc, at)
                return doc
        # The dynamic part is written by hand (same JSON as json.dumps with sorted keys, as
        # from_bytes reads it): it is saved after every counter or hash-tree update, and the
        # generic encoder was a tenth of such a command's simulation cost.
        counters = ", ".join([f'"{k}": {_counter_head(c.label, c.auth)}{int(c.value)}]'
                              for k, c in sorted(self.counters.items())])
        ext = getattr(self, "_extra_json", None)  # (copy of extra, its JSON): extra rarely changes
        if ext is None or ext[0] != self.extra:
            ext = self._extra_json = (dict(self.extra), ", ".join(
                [f"{_json_str(str(k))}: {_json_str(str(v))}" for k, v in sorted(self.extra.items())]))
        head = (f'{{"version": {STATE_VERSION}, "static": {cached[1]}, "dynamic": '
                f'{{"counters": {{{counters}}}, "extra": {{{ext[1]}}}, "hashtree_root": ').encode()
        tail = f', "next_counter_id": {int(self.next_counter_id)}}}}}'.encode()
        doc = head + (f'"{root.hex()}"'.encode() if root else b"null") + tail
        self._last_doc = (rest, ext[0], root, doc, len(head) + 1)
        return doc

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> "PersistentState":
        try:
            outer = json.loads(data)
            if not isinstance(outer, dict) or outer.get("version") != STATE_VERSION:
                raise ValueError(f"unknown state version {outer.get('version') if isinstance(outer, dict) else None!r}")
            doc = {**outer["static"], **outer["dynamic"]}
            h = lambda v: bytes.fromhex(v) if v else None  # noqa: E731
            return cls(
                ek=_undo_der(doc["ek"]) if doc["ek"] else None,
                owner_auth=h(doc["owner_auth"]), tpm_proof=h(doc["tpm_proof"]),
                srk=_undo_der(doc["srk"]) if doc["srk"] else None,
                srk_auth=bytes.fromhex(doc["srk_auth"]),
                counters={int(k): Counter(bytes.fromhex(a), bytes.fromhex(b), int(v))
                          for k, (a, b, v) in doc["counters"].items()},
                next_counter_id=int(doc["next_counter_id"]),
                hashtree_root=h(doc["hashtree_root"]), extra=dict(doc.get("extra", {})),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise TrustlabError(f"TPM state in {where} is corrupt: {e}") from None
