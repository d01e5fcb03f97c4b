"""What the TPM says it can do: TPM2_TestParms for PQC parameters and TPM2_GetCapability
with the 1.85 algorithm IDs, commands and TPM_PT_ML_PARAMETER_SETS merged into swtpm's lists,
and the client's own PQC objects and sequences among the transient handles (TPM_CAP_HANDLES).
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.extensions import (
    Command,
    Context,
    Reader,
    Reply,
    TpmError,
    at_param,
    tpm_command,
)
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.state import (
    own_space,
    parameter_set,
)


def _tests_pqc_parameters(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        return r.u16() in S.PQC_TYPES
    except TpmError:
        return False


@tpm_command(0x18A, "TPM2_TestParms", handles=0, claims=_tests_pqc_parameters)
def test_parms(cmd: Command, ctx: Context) -> Reply:
    """TPMT_PUBLIC_PARMS of a PQC type: success if this TPM could make such a key (TPM_RC_PARMS if not)."""
    area = cmd.params.rest()
    kind = struct.unpack_from(">H", area)[0]
    # TPMT_PUBLIC_PARMS is TPMT_PUBLIC without nameAlg, attributes, authPolicy and unique
    r = Reader(S.u16(kind) + S.u16(S.TPM_ALG_SHA256) + S.u32(0) + S.tpm2b(b"") + area[2:] + S.tpm2b(b"")).param(1)
    pub = S.parse_public(r)
    r.end()
    parameter_set(pub, 1)
    if pub.type == S.TPM_ALG_MLKEM and pub.symmetric is not None:
        raise TpmError(at_param(ext.TPM_RC_SYMMETRIC, 1), "restricted (storage) ML-KEM keys are not supported")
    return Reply()


TPM_CAP_ALGS = 0x0
TPM_CAP_HANDLES = S.TPM_CAP_HANDLES
TPM_CAP_COMMANDS = S.TPM_CAP_COMMANDS
TPM_CAP_TPM_PROPERTIES = S.TPM_CAP_TPM_PROPERTIES
TPM_PT_ML_PARAMETER_SETS = 0x131  # PT_FIXED + 49 (1.85)
# TPMA_ALGORITHM: asymmetric (bit 0), object (3), signing (8), encrypting (9)
PQC_ALGORITHMS = {S.TPM_ALG_MLKEM: 0x0209, S.TPM_ALG_MLDSA: 0x0109, S.TPM_ALG_HASH_MLDSA: 0x0109}
# TPMA_ML_PARAMETER_SET (1.85 Part 2 Table 46, as wolfTPM and public extracts give it)
MLKEM_BITS = {1: 1 << 0, 2: 1 << 1, 3: 1 << 2}
MLDSA_BITS = {1: 1 << 3, 2: 1 << 4, 3: 1 << 5}
EXT_MU_BIT = 1 << 6


def ml_parameter_sets() -> int:
    """TPMA_ML_PARAMETER_SET of this TPM: the sets :mod:`.keys` can run, and external mu (SignDigest)."""
    bits = EXT_MU_BIT
    bits |= sum(b for p, b in MLKEM_BITS.items() if keys.parameter_set(S.TPM_ALG_MLKEM, p))
    bits |= sum(b for p, b in MLDSA_BITS.items() if keys.parameter_set(S.TPM_ALG_MLDSA, p))
    return bits


def _pqc_commands() -> dict[int, int]:
    """TPMA_CC of the 1.85 commands: commandIndex, flushed (bit 24), cHandles (bits 25-27), rHandle (bit 28).

    The two *SequenceComplete commands end their sequence, so they are ``flushed``
    (as TPM2_SequenceComplete is; wolfTPM's fwTPM reports the same).
    """
    out = {}
    for code, reg in ext.registered().items():
        if 0x1A3 <= code <= 0x1AA:
            out[code] = (code | (1 << 24 if code in (0x1A3, 0x1A4) else 0) | reg.handles << 25
                         | (1 << 28 if code in (0x1A9, 0x1AA) else 0))
    return out


# entry width and sort key of each merged list: TPMS_ALG_PROPERTY, TPMA_CC, TPMS_TAGGED_PROPERTY
_WIDTH = {TPM_CAP_ALGS: 6, TPM_CAP_COMMANDS: 4, TPM_CAP_TPM_PROPERTIES: 8}
TPM_PT_TOTAL_COMMANDS = 0x129
TPM_PT_LIBRARY_COMMANDS = 0x12A
TPM_PT_MAX_COMMAND_SIZE = S.TPM_PT_MAX_COMMAND_SIZE
TPM_PT_MAX_RESPONSE_SIZE = S.TPM_PT_MAX_RESPONSE_SIZE


def _key(capability: int, entry: bytes) -> int:
    if capability == TPM_CAP_ALGS:
        return struct.unpack(">H", entry[:2])[0]
    if capability == TPM_CAP_COMMANDS:
        return struct.unpack(">I", entry)[0] & 0xFFFF
    return struct.unpack(">I", entry[:4])[0]


class _Tables:
    """What the extension adds to each list, computed once per state of the extension registry.

    ``ours``: capability -> key -> entry; ``reach``: capability -> the highest
    key whose entry the extension adds or changes (a request starting above it
    is swtpm's alone); ``n_commands``: the 1.85 commands, added to swtpm's counts.
    """

    def __init__(self) -> None:
        commands = _pqc_commands()
        self.version = ext.registry_version()
        self.n_commands = len(commands)
        self.ours: dict[int, dict[int, bytes]] = {
            TPM_CAP_ALGS: {a: S.u16(a) + S.u32(attrs) for a, attrs in PQC_ALGORITHMS.items()},
            TPM_CAP_COMMANDS: {c: S.u32(v) for c, v in commands.items()},
            TPM_CAP_TPM_PROPERTIES: {TPM_PT_ML_PARAMETER_SETS: S.u32(TPM_PT_ML_PARAMETER_SETS)
                                     + S.u32(ml_parameter_sets())},
        }
        counted = (TPM_PT_TOTAL_COMMANDS, TPM_PT_LIBRARY_COMMANDS) if commands else ()
        self.reach = {cap: max([*entries, *(counted if cap == TPM_CAP_TPM_PROPERTIES else ())], default=-1)
                      for cap, entries in self.ours.items()}


_tables: _Tables | None = None


def _current() -> _Tables:
    """The extension's tables, recomputed only when a command was (re)registered since."""
    global _tables
    tables = _tables
    if tables is None or tables.version != ext.registry_version():
        tables = _tables = _Tables()
    return tables


def _ours(capability: int) -> dict[int, bytes]:
    return _current().ours[capability]


def _counting_ours(entry: bytes, n_commands: int, max_size: int | None) -> bytes:
    """swtpm's command counts plus the 1.85 commands, so they match the TPM_CAP_COMMANDS list; and the
    command / response size bound serve enforces for this profile (``Context.max_command_size``, the
    chip's; serving/tpm2/limits.py) in place of libtpms' own."""
    prop, value = struct.unpack(">II", entry)
    if prop in (TPM_PT_TOTAL_COMMANDS, TPM_PT_LIBRARY_COMMANDS):
        return struct.pack(">II", prop, value + n_commands)
    if max_size is not None and prop in (TPM_PT_MAX_COMMAND_SIZE, TPM_PT_MAX_RESPONSE_SIZE):
        return struct.pack(">II", prop, max_size)
    return entry


_UNTOUCHED = "pqc.getcap.untouched"
_UNTOUCHED_MAX = 4096


def _lists_what_we_extend(cmd: Command, ctx: Context) -> bool:
    """A GetCapability whose answer the extension may change; the rest take serve's fast path.

    Not claimed: requests with sessions (an audit/encrypt session's response
    must come from the TPM untouched), capabilities the extension does not
    extend, requests that start above everything it adds, and requests this
    backend answered before without reaching what it adds (which entries a
    TPM lists from a start point is fixed by its implementation, not by its
    state; the handler records them in ``ctx.state``).
    """
    if cmd.sessions:
        return False
    raw, pos = cmd.raw, cmd.params.pos
    if len(raw) < pos + 4:
        return False
    if len(raw) >= pos + 12 and struct.unpack_from(">I", raw, pos)[0] == TPM_CAP_HANDLES:
        return bool(_own_handles(ctx, struct.unpack_from(">I", raw, pos + 4)[0]))
    reach = _current().reach.get(struct.unpack_from(">I", raw, pos)[0])
    if reach is None:
        return False
    if len(raw) < pos + 12:
        return True  # the handler answers the short parameter area (TPM_RC_INSUFFICIENT), as it always has
    capability, first, count = struct.unpack_from(">III", raw, pos)
    if first > reach:
        return False
    return (capability, first, count) not in ctx.state.get(_UNTOUCHED, set)


def _passes(raw: bytes, ctx: Context) -> bool:
    """:func:`_lists_what_we_extend`'s False for a well-formed sessionless request, read off the raw frame
    (no parsing: what serve's fast path costs most GetCapability requests)."""
    if raw[:2] != b"\x80\x01" or len(raw) != 22:
        return False
    capability, first, count = struct.unpack_from(">III", raw, 10)
    if capability == TPM_CAP_HANDLES:
        return not _own_handles(ctx, first)
    reach = _current().reach.get(capability)
    return reach is None or first > reach or (capability, first, count) in ctx.state.get(_UNTOUCHED, set)


@tpm_command(0x17A, "TPM2_GetCapability", handles=0, claims=_lists_what_we_extend, passes=_passes)
def get_capability(cmd: Command, ctx: Context) -> Reply:
    """swtpm's algorithm / command / property list with the 1.85 PQC entries merged in, in order.

    The merged list stays one the TPM could have given: ordered, at most
    ``propertyCount`` entries, ``moreData`` set when ours fell after the cut.
    """
    capability, first, count = cmd.params.u32(), cmd.params.u32(), cmd.params.u32()
    response = ctx.backend_transact(cmd.raw)
    if capability == TPM_CAP_HANDLES:
        return Reply(raw=_with_handles(response, _own_handles(ctx, first), count))
    merged = _merged(capability, first, count, response, ctx.max_command_size)
    if merged == response:  # swtpm's answer, which it will give again: not claimed next time
        untouched = ctx.state.get(_UNTOUCHED, set)
        if len(untouched) >= _UNTOUCHED_MAX:
            untouched.clear()
        untouched.add((capability, first, count))
    return Reply(raw=merged)


def _own_handles(ctx: Context, first: int) -> list[int]:
    """The client's PQC objects and sequences (the TPM's transient objects, as libtpms lists its sequence
    objects too) from ``first`` on: under the resource manager only its own, as the RM lists swtpm's."""
    if first >> 24 != 0x80 or first > ext.EXTENSION_HANDLE_LAST:
        return []  # another handle type: listed by type, none of ours
    space = own_space(ctx)
    if space is None:
        return []
    return sorted(h for h in (*space.objects, *space.sequences) if h >= first)


def _with_handles(response: bytes, ours: list[int], count: int) -> bytes:
    """swtpm's TPM_CAP_HANDLES answer with ``ours`` (above every handle of swtpm's) after its own."""
    if response[6:10] != b"\0\0\0\0" or len(response) < 19:
        return response
    more, cap, n = struct.unpack_from(">BII", response, 10)
    if more or len(response) != 19 + 4 * n:
        return response  # swtpm's list was cut before ours begin
    handles = sorted({*struct.unpack_from(f">{n}I", response, 19), *ours})
    if len(handles) > count:
        handles, more = handles[:count], 1
    body = bytes([more]) + S.u32(cap) + S.u32(len(handles)) + b"".join(S.u32(h) for h in handles)
    return struct.pack(">HII", 0x8001, 10 + len(body), 0) + body


def _merged(capability: int, first: int, count: int, response: bytes, max_size: int | None = None) -> bytes:
    """The response frame: the backend's ``response`` with what the extension adds merged in."""
    if response[6:10] != b"\0\0\0\0":
        return response
    tables = _current()
    r = Reader(response, 10)
    more, _cap, n = r.u8(), r.u32(), r.u32()
    width = _WIDTH[capability]
    entries = [r.take(width) for _ in range(n)]
    if capability == TPM_CAP_TPM_PROPERTIES:
        entries = [_counting_ours(e, tables.n_commands, max_size) for e in entries]
    last = _key(capability, entries[-1]) if entries and more else None  # the backend stopped there
    ours = [e for k, e in tables.ours[capability].items() if k >= first and (last is None or k < last)]
    merged = sorted(entries + ours, key=lambda e: _key(capability, e))
    if len(merged) > count:
        merged, more = merged[:count], 1
    body = bytes([more]) + S.u32(capability) + S.u32(len(merged)) + b"".join(merged)
    return struct.pack(">HII", 0x8001, 10 + len(body), 0) + body
