"""A TPM 2.0 command's modelled cost, from the bytes that crossed the wire.

The proxy knows only frames. This module turns (command frame, response
frame, objects seen so far) into the terms of the family-``tpm2`` formula
(:mod:`trustlab.timing.formula_sets.tpm2`): input/output sizes, the key
variant behind the handle a command names, and the number of hashed bytes.
Commands the rule table does not know are timed as overhead + bytes and
reported as unmodelled; so are terms whose component the profile lacks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from trustlab.devices.tpm2 import objects
from trustlab.devices.tpm2.commands import command_name
from trustlab.devices.tpm2.wire import HEADER_SIZE
from trustlab.timing.formula_sets import tpm2 as rules
from trustlab.timing.profile import Profile


@dataclass(slots=True)
class CommandCost:
    """What one command is charged, before drawing from any spread.

    Not frozen: one is built per served command, and a frozen dataclass's
    ``__init__`` (a setattr call per field) costs the proxy about 1 us more.
    Treat it as read-only.
    """

    command: str
    code: int
    variant: str | None
    terms: dict[str, float]
    in_bytes: int
    out_bytes: int
    rc: int
    modelled: bool
    missing: tuple[str, ...] = field(default=())


def hashed_bytes(command: bytes, code: int) -> int:
    """Size of the data buffer a hashing command digests (0 if unreadable)."""
    r = objects.parameters(command, code)
    if r is None:
        return 0
    try:
        return len(r.tpm2b())
    except ValueError:
        return 0


def key_variant_for(name: str, code: int, command: bytes, table: objects.ObjectTable) -> str | None:
    """The key algorithm a command uses: from its template, or its key handle."""
    if name in rules.KEYGEN:
        return objects.template_variant(command, code)
    if name in ("TPM2_Load", "TPM2_LoadExternal"):
        return objects.template_variant(command, code)
    use = rules.KEY_USE.get(name)
    if use is None:
        return None
    try:
        n = objects.COMMAND_HANDLES.get(code, use[1] + 1)
        handle = objects.handles(command, n)[use[1]]
    except (ValueError, struct.error):
        return None
    return table.variant(handle)


def assess(command: bytes, response: bytes, table: objects.ObjectTable,
           profile: Profile | None = None) -> CommandCost:
    """Terms for one exchanged command/response pair (table is not updated here)."""
    code = struct.unpack_from(">I", command, 6)[0] if len(command) >= HEADER_SIZE else 0
    rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= HEADER_SIZE else 0x101
    name = command_name(code)
    variant = key_variant_for(name, code, command, table)
    n_hash = hashed_bytes(command, code) if name in rules.HASHING else 0
    terms = rules.command_terms(name, variant, len(command), len(response), n_hash, ok=(rc == 0))
    missing: tuple[str, ...] = ()
    if profile is not None:
        missing = tuple(c for c in terms if c not in profile)
        terms = {c: n for c, n in terms.items() if c in profile}
    modelled = rules.is_modelled(name) and not missing
    return CommandCost(name, code, variant, terms, len(command), len(response), rc, modelled, missing)


class Pricer:
    """:func:`assess` for one profile, with the term structure cached per (command code, variant,
    succeeded): a served command then only has its sizes filled in.

    The result equals :func:`assess`'s. Hashing commands (whose crypto
    terms depend on the digested size) and formulas whose crypto terms touch
    the overhead terms are assessed in full each time. The rest depend only on
    (code, key variant, response code, sizes), so the same such command gets
    the same :class:`CommandCost` object again (read-only, as its docstring
    says): a served command's price is then one lookup.
    """

    MEMO_MAX = 4096
    """Distinct (code, variant, rc, sizes) kept; beyond it the memo starts over."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._names: dict[int, tuple[str, bool, bool]] = {}
        self._plans: dict[tuple[int, str | None, bool], tuple[dict[str, float], tuple[str, ...], bool] | None] = {}
        self._memo: dict[tuple[int, str | None, int, int, int], CommandCost] = {}

    def assess(self, command: bytes, response: bytes, table: objects.ObjectTable) -> CommandCost:
        code = struct.unpack_from(">I", command, 6)[0] if len(command) >= HEADER_SIZE else 0
        known = self._names.get(code)
        if known is None:
            name = command_name(code)
            known = self._names[code] = (name, name in rules.HASHING,
                                         name in rules.KEYGEN or name in rules.KEY_USE
                                         or name in ("TPM2_Load", "TPM2_LoadExternal"))
        name, hashing, keyed = known
        if hashing:
            return assess(command, response, table, self.profile)
        rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= HEADER_SIZE else 0x101
        variant = key_variant_for(name, code, command, table) if keyed else None
        memo_key = (code, variant, rc, len(command), len(response))
        known_cost = self._memo.get(memo_key)
        if known_cost is not None:
            return known_cost
        key = (code, variant, rc == 0)
        plan = self._plans.get(key, False)
        if plan is False:
            plan = self._plans[key] = self._plan(name, variant, rc == 0)
        if plan is None:
            return assess(command, response, table, self.profile)
        template, missing, modelled = plan
        terms = dict(template)
        if "ohir" in terms:
            terms["ohir"] = len(command)
        if "ohor" in terms:
            terms["ohor"] = len(response)
        priced = CommandCost(name, code, variant, terms, len(command), len(response), rc, modelled, missing)
        if len(self._memo) >= self.MEMO_MAX:
            self._memo.clear()
        self._memo[memo_key] = priced
        return priced

    def _plan(self, name: str, variant: str | None,
              ok: bool) -> tuple[dict[str, float], tuple[str, ...], bool] | None:
        """The terms (sizes zero) the profile has, the missing ones, whether modelled; None: not cacheable."""
        crypto = rules.crypto_terms(name, variant, 0) if ok else {}
        if {"ohc", "ohir", "ohor"} & crypto.keys():
            return None
        terms = rules.command_terms(name, variant, 0, 0, 0, ok=ok)
        missing = tuple(c for c in terms if c not in self.profile)
        template = {c: n for c, n in terms.items() if c in self.profile}
        return template, missing, rules.is_modelled(name) and not missing


def zero_profile() -> Profile:
    """A family-``tpm2`` profile where everything is free: proxy latency and overhead baselines."""
    from trustlab.timing.profile import Component, Provenance

    names = ["ohc", "ohir", "ohor", "sha256_byte", "hmac", "nv_write", "nv_increment"]
    for v in ("rsa2048", "ecc256"):
        names += [f"{v}_{op}" for op in ("sign", "verify", "enc", "dec", "ecdh", "keygen")]
    comps = {n: Component(n, 0.0, "byte" if n in ("ohir", "ohor", "sha256_byte") else "call",
                          provenance=Provenance(source="zero-cost baseline")) for n in names}
    return Profile(name="zero", components=comps, family="tpm2",
                   provenance=Provenance(source="zero-cost baseline", note="every component costs nothing"))
