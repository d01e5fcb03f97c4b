"""The TPM random oracle (Gunupudi & Tate 2007; timed in their 2010 paper, Sec. VI).

n parties share one secret HMAC key that exists only inside TPMs: the source
TPM creates a certified migratable HMAC key whose approved list (msaList)
holds exactly the destinations' storage keys, certifies it with its AIK, and
migrates it directly to each destination; each destination converts and loads
it; then every party answers oracle queries with TPM_HMAC and all answers
agree. Everything goes through public :class:`~trustlab.devices.tpm12.Tpm12`
commands; each party's TPM has its own clock, so the source's and the
destinations' TPM time are measured separately, and authorization-session
commands (TPM_OIAP/TPM_OSAP) are totalled apart, as the paper found they
matter.

Host-side verification (step 2a of the paper) is done for real: the
destination checks the AIK's signature on TPM_CERTIFY_INFO2 and that the
certified approved list is exactly the list of TPM-bound storage keys.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from cryptography.exceptions import InvalidSignature

from trustlab.apps import keypool
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12.client import hmac_key_template, msa_composite, pubkey_digest
from trustlab.devices.tpm12.keys import Key12, rsa_public
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

SESSION_COMMANDS = ("TPM_OIAP", "TPM_OSAP")
# the paper's operations, in its order (Sec. VI-B)
OPERATIONS = [("T1", "TPM_CMK_ApproveMA"), ("T2", "TPM_CMK_CreateKey"), ("T3", "TPM_LoadKey2"),
              ("T4", "TPM_CertifyKey2"), ("T5", "TPM_CMK_CreateBlob"),
              ("T6", "TPM_AuthorizeMigrationKey"), ("T7", "TPM_CMK_ConvertMigration")]
SOURCE_OPS = {"TPM_CMK_ApproveMA", "TPM_CMK_CreateKey", "TPM_LoadKey2", "TPM_CertifyKey2",
              "TPM_CMK_CreateBlob", "TPM_AuthorizeMigrationKey"}
DEST_OPS = {"TPM_CMK_ConvertMigration", "TPM_LoadKey2"}

OWNER, SRK, AIK, KEY = secret("owner"), secret("srk"), secret("aik"), secret("oracle key")
CERTIFY_NONCE = hashlib.sha1(b"oracle certification").digest()  # the source's antireplay for TPM_CertifyKey2


@dataclass
class Party:
    name: str
    tpm: Tpm12
    clock: Clock
    key_handle: int | None = None


@dataclass
class OracleRun:
    """Ledgers of one protocol run: per-party command times (ms) and the answers."""

    profile: str
    parties: int
    calls: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # party -> [(command, ms)]
    answers: list[list[bytes]] = field(default_factory=list)  # per query, per party
    query_ms: list[float] = field(default_factory=list)
    setup_calls: dict[str, int] = field(default_factory=dict)  # party -> commands before the queries

    def setup_ms(self, party: str, commands: set[str] | tuple[str, ...]) -> float:
        """ms of ``commands`` during setup and migration (steps 1-2), excluding queries."""
        return sum(ms for cmd, ms in self.calls[party][: self.setup_calls[party]] if cmd in commands)

    def ms(self, party: str, commands: set[str] | tuple[str, ...]) -> float:
        return sum(ms for cmd, ms in self.calls.get(party, []) if cmd in commands)

    def by_command(self, parties: list[str]) -> dict[str, list[float]]:
        """Command -> the ms of each of its calls by ``parties``, party by party in call order."""
        out: dict[str, list[float]] = {}
        for p in parties:
            for cmd, ms in self.calls.get(p, []):
                calls = out.get(cmd)
                if calls is None:
                    out[cmd] = [ms]
                else:
                    calls.append(ms)
        return out


def cmk_create_blob_bytes(parties: int) -> int:
    """The TPM_CMK_CreateBlob command frame the source sends (Part 3, 11.7), whose msaList names every
    destination: the largest frame of the study, which must fit the TPM's command buffer (libtpms:
    TPM_BUFFER_MAX, 4096 bytes; TPM_CMK_ConvertMigration carries the same list and is 3 bytes shorter).

    Why a sum rather than a constant: each part is the size of what :func:`run` sends with 2048-bit
    keys, so a change of key size or scheme shows here (the test compares it with the frame sent)."""
    pubkey = 24 + 4 + 2048 // 8            # TPM_PUBKEY: TPM_KEY_PARMS (RSA, 12-byte parms) + TPM_STORE_PUBKEY
    migration_key_auth = pubkey + 2 + 20   # TPM_MIGRATIONKEYAUTH: key, scheme, digest
    msa_list = 4 + 4 + 20 * (parties - 1)  # msaListSize + TPM_MSA_COMPOSITE (count, one digest per destination)
    enc_data = 4 + 2048 // 8               # the CMK's encData under the 2048-bit SRK
    tickets = 4 + 4                        # restrictTicket and sigTicket sizes (empty: direct migration)
    auth = 4 + 20 + 1 + 20                 # one OIAP authorization
    return 10 + 4 + 2 + migration_key_auth + 20 + msa_list + tickets + enc_data + auth


def query_input_bytes(input_blocks: int) -> int:
    """The query input :func:`run` sends: the longest that HMAC hashes in ``input_blocks`` blocks after the key
    block (SHA-1 pads with at least 9 bytes: 0x80 and the 64-bit length)."""
    return 64 * input_blocks - 9


def tpm_hmac_bytes(input_blocks: int) -> int:
    """The TPM_HMAC command frame of a query (what-if, commands/hmac.py), which must fit the TPM's command
    buffer (libtpms: TPM_BUFFER_MAX, 4096 bytes) like any other command.

    A sum of the parts :func:`run` sends, as :func:`cmk_create_blob_bytes` (the test compares it with the frame
    sent)."""
    key_handle = 4
    data = 4 + query_input_bytes(input_blocks)  # dataSize + the input
    output_blocks = 4
    auth = 4 + 20 + 1 + 20                      # one OIAP authorization
    return 10 + key_handle + data + output_blocks + auth


def _make_party(name: str, profile: Profile, realtime: bool, seed: int, keygen=None) -> Party:
    clock = Clock(profile, seed=seed, realtime=False)
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=keygen)
    tpm.TPM_TakeOwnership(OWNER, SRK)  # provisioning, before the timed protocol
    clock.reset()
    clock.realtime = realtime
    return Party(name, tpm, clock)


def _track(party: Party, log: list[tuple[str, float]]):
    """Wrap the party's engine so each top-level command's modelled ms is logged."""
    engine = party.tpm.engine
    execute = engine.execute

    def traced(frame: bytes) -> bytes:
        rsp = execute(frame)
        rec = party.clock.last
        if rec is not None:
            log.append((rec.name, rec.ms))
        return rsp

    engine.execute = traced  # type: ignore[method-assign]


def verify_certificate(aik_pub, info: bytes, signature: bytes, msa_digest: bytes, cmk_digest: bytes) -> None:
    """Step 2a: the AIK certified this CMK (``cmk_digest``: SHA-1 of its TPM_PUBKEY), restricted
    to exactly this approved list."""
    try:
        hostcrypto.verify_sha1(aik_pub, signature, hostcrypto.sha1(info))
    except InvalidSignature:
        raise TrustlabError("oracle: the CMK certificate's AIK signature does not verify") from None
    if cmk_digest not in info or not info.endswith(b"\x00\x00\x00\x14" + msa_digest):
        raise TrustlabError("oracle: the certificate is not for this CMK and approved list")


def run(profile: Profile, parties: int, *, input_blocks: int = 3, output_blocks: int = 1,
        queries: int = 3, realtime: bool = False, seed: int = 0, keygen=None,
        step: Callable[[str], None] | None = None) -> OracleRun:
    """Run setup, migration to ``parties - 1`` destinations, and ``queries`` HMAC queries.

    ``keygen`` supplies the host RSA keys (default: the cached pool of
    :mod:`trustlab.apps.keypool`); the modelled key generation is charged
    by the engine either way. ``step`` (a progress bar's) is called with the phase's name after
    each of the ``steps(parties, queries)`` steps: a party made, a destination migrated, a query
    answered by every party.
    """
    step = step or (lambda phase: None)
    if keygen is None:
        keygen = keypool.cursor()
    if parties < 2:
        raise TrustlabError(f"oracle: --parties must be at least 2, not {parties}")
    if input_blocks < 1 or output_blocks < 1:
        raise TrustlabError("oracle: --input-blocks and --output-blocks must be at least 1")
    source = _make_party("source", profile, realtime, seed, keygen)
    step("setup")
    dests = []
    for i in range(1, parties):
        dests.append(_make_party(f"dest{i}", profile, realtime, seed + i, keygen))
        step("setup")
    out = OracleRun(profile.name, parties)
    for p in [source, *dests]:
        out.calls[p.name] = []
        _track(p, out.calls[p.name])

    # destinations publish their storage root's public key (host-side, owner-authorized read)
    dest_pubs = [d.tpm.TPM_OwnerReadInternalPub(OWNER, C.TPM_KH_SRK) for d in dests]
    # the AIK exists before the protocol (provisioning); its creation is not part of the study
    aik_blob, _binding = source.tpm.TPM_MakeIdentity(OWNER, SRK, AIK)
    for p in [source, *dests]:
        del out.calls[p.name][:]
        p.clock.reset()
    aik_pub = rsa_public(Key12.from_bytes(aik_blob).pub)

    # ---- Step 1 at the source ----
    s = source.tpm
    dest_digests = [pubkey_digest(pub) for pub in dest_pubs]
    msa = msa_composite(dest_digests)
    msa_digest = hostcrypto.sha1(msa)
    approval = s.TPM_CMK_ApproveMA(OWNER, msa_digest)                                     # 1a T1
    cmk = Key12.from_bytes(s.TPM_CMK_CreateKey(C.TPM_KH_SRK, SRK, hmac_key_template(), KEY,
                                               approval, msa_digest))                     # 1b T2
    cmk_digest = pubkey_digest(cmk.pubkey())
    source.key_handle = s.TPM_LoadKey2(C.TPM_KH_SRK, cmk.marshal(), SRK)                  # 1c T3
    aik = s.TPM_LoadKey2(C.TPM_KH_SRK, aik_blob, SRK)                                      #    T3
    info, cert_sig = s.TPM_CertifyKey2(source.key_handle, aik, CERTIFY_NONCE, msa_digest, KEY, AIK)  # T4
    blobs = []
    for pub in dest_pubs:                                                                  # 1d
        mka = s.TPM_AuthorizeMigrationKey(OWNER, pub)                                      # T6
        blobs.append(s.TPM_CMK_CreateBlob(C.TPM_KH_SRK, SRK, mka, cmk_digest, msa, cmk.enc))  # T5

    # ---- Step 2 at each destination ----
    for d, dest_digest, (random, blob) in zip(dests, dest_digests, blobs):
        verify_certificate(aik_pub, info, cert_sig, msa_digest, cmk_digest)                # 2a (host)
        ticket = msa_digest + dest_digest + cmk_digest
        enc = d.tpm.TPM_CMK_ConvertMigration(C.TPM_KH_SRK, SRK, ticket, cmk.with_enc(blob).marshal(),
                                             msa, random)                                  # 2b T7
        d.key_handle = d.tpm.TPM_LoadKey2(C.TPM_KH_SRK, cmk.with_enc(enc).marshal(), SRK)  # 2c T3
        step("migration")

    # ---- Step 3: oracle queries ----
    out.setup_calls = {name: len(calls) for name, calls in out.calls.items()}
    length = query_input_bytes(input_blocks)
    for q in range(queries):
        data = hashlib.sha1(f"query {q}".encode()).digest() * (length // 20 + 1)
        answers = []
        for p in [source, *dests]:
            try:
                answers.append(p.tpm.TPM_HMAC(p.key_handle, data[:length], KEY, output_blocks))
            except TpmError as e:
                raise TrustlabError(f"oracle: {p.name} could not answer: {e}") from None
            out.query_ms.append(p.clock.last.ms)
        out.answers.append(answers)
        step("queries")
    return out


def steps(parties: int, queries: int) -> int:
    """How often :func:`run` calls its ``step``: each party made, each destination migrated, each query round."""
    return parties + (parties - 1) + queries
