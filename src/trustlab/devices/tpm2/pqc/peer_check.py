"""The same 1.85 command frames sent to two TPMs, and the shape of every answer, for a differential check.

A *peer* is another 1.85 implementation - wolfTPM's fwTPM (``fwtpm_server``)
over the MS-simulator protocol - and *ours* is ``trustlab serve``. The
scenarios (:mod:`.peer_scenarios`) build their frames from the answers they
get, so they run unchanged on both; :mod:`.peer_shapes` reads the answers. A
step records the command, the response code
and the *shape* of a successful answer: every structure field whose value is
fixed by the spec (tags, algorithm IDs, attributes, parameter sets, sizes),
random bytes by their size only, and whether each signature verifies and
each shared secret matches - checked here with cryptography (OpenSSL), never
by either TPM.

Compared: the response code with a format-one code's parameter/handle number
stripped (wolfTPM's fwTPM answers unnumbered codes), and the shape. A
ticket's hierarchy and HMAC are left out of the shape: ours are NULL tickets
(the hierarchy proof values live inside swtpm; see the README).

:func:`known` names the differences that are understood, each with its reason;
``tools/wolftpm_differential.py`` runs both TPMs, ``tests/tpm2/test_pqc_peer_check.py``
checks ours against a recorded run of the peer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.peer_scenarios import SCENARIOS
from trustlab.devices.tpm2.pqc.peer_session import Session, Step, normalized


def run(connect: Callable[[], Callable[[bytes], bytes]], names: list[str] | None = None) -> list[Step]:
    """Every scenario (or those named) against one TPM, after TPM2_Startup(CLEAR) (an error there is ignored).

    ``connect`` opens a connection and returns its transact function.
    """
    session = Session(connect)
    session.transact(S.frame(0x144, [], S.u16(0)))
    for name in names or list(SCENARIOS):
        session.scenario = name
        SCENARIOS[name](session)
    return session.steps


def _only(*fields: str) -> Callable[[Step | None, Step | None], bool]:
    """Both succeeded and their shapes differ in ``fields`` only."""
    def test(o: Step | None, p: Step | None) -> bool:
        if o is None or p is None or o.rc or p.rc or not isinstance(o.shape, dict) or not isinstance(p.shape, dict):
            return False
        return ({k: v for k, v in o.shape.items() if k not in fields}
                == {k: v for k, v in p.shape.items() if k not in fields})
    return test


def _any(o: Step | None, p: Step | None) -> bool:
    return True


Rule = tuple[Callable[[str, str], bool], Callable[[Step | None, Step | None], bool], str]
KNOWN_RULES: list[Rule] = [
    (lambda sc, lb: lb.startswith("CreatePrimary ECC"), _only("parentNameAlg", "pcrDigest", "locality"),
     "the ECC key is swtpm's own (libtpms): its creation data has parentNameAlg TPM_ALG_NULL, the digest of the "
     "empty PCR selection and locality 1, wolfTPM's an empty digest and locality 0"),
    (lambda sc, lb: lb.startswith("CreatePrimary"), _only("parentNameAlg"),
     "creationData.parentNameAlg of a primary key: TPM_ALG_NULL in the TCG reference code (libtpms; swtpm's own "
     "primaries say the same), wolfTPM writes the key's nameAlg"),
    (lambda sc, lb: lb == "CreatePrimary, userAuth longer than the nameAlg digest", _any,
     "Part 3 (TPM2_Create/CreatePrimary: TPM_RC_SIZE when authValue is larger than the nameAlg digest) and "
     "libtpms refuse it; wolfTPM's fwTPM accepts it"),
    (lambda sc, lb: sc == "Create/Load" and lb.startswith("Create "), _only("parentName", "parentQualifiedName"),
     "creationData.parentName of an ordinary key: the parent's Name (nameAlg + digest, 34 bytes) as Part 2 "
     "defines it and libtpms writes it; wolfTPM writes the parent's 4-byte handle"),
    (lambda sc, lb: sc == "ML-KEM-512" or lb == "TestParms ML-KEM set 1", _any,
     "ML-KEM-512: pyca/cryptography offers ML-KEM-768/1024 only, so this TPM answers TPM_RC_PARMS and "
     "TPM_PT_ML_PARAMETER_SETS leaves bit 0 clear"),
    (lambda sc, lb: lb == "TPM_PT_ML_PARAMETER_SETS", _any,
     "the sets each TPM runs: trustlab has no ML-KEM-512 (bit 0) and does external mu (bit 6); wolfTPM has all "
     "six sets and no external mu (wolfCrypt has no mu-direct signing)"),
    (lambda sc, lb: lb == "TestParms ML-DSA allowExternalMu", _any,
     "wolfTPM's fwTPM does not implement external mu and says TPM_RC_EXT_MU, as 1.85 prescribes for such a TPM; "
     "trustlab implements it"),
    (lambda sc, lb: sc == "Quote" and lb.startswith("Quote"), _any,
     "wolfTPM's fwTPM signs no attestation with an ML-DSA key (TPM_RC_KEY); trustlab signs the TPMS_ATTEST "
     "bytes with pure ML-DSA (the README's choice; the quote verifies with OpenSSL)"),
    (lambda sc, lb: "-87" in sc and ("VerifySequenceComplete" in lb or "VerifyDigestSignature" in lb),
     lambda o, p: o is not None and o.rc == 0x142,
     "verifying ML-DSA-87 in the TPM is a 4.7 KB command: serve takes 4096-byte commands (libtpms's buffer) "
     "and ends the connection, wolfTPM's PQC build takes 8192"),
]


def known(scenario: str, label: str, ours: Step | None = None, peer: Step | None = None) -> str | None:
    """Why ours differs from wolfTPM's fwTPM at this step (given both answers), if that is understood."""
    for where, what, why in KNOWN_RULES:
        if where(scenario, label) and what(ours, peer):
            return why
    return None


@dataclass
class Row:
    scenario: str
    label: str
    ours_rc: int | None
    peer_rc: int | None
    ours: Any
    peer: Any
    agree: bool
    known: str | None


def compare(ours: list[Step], peer: list[Step]) -> list[Row]:
    """Step by step (matched by scenario and label): same normalized response code and the same shape."""
    index = {(p.scenario, p.label): p for p in peer}
    mine = {(o.scenario, o.label): o for o in ours}
    rows = []
    for key in list(mine) + [k for k in index if k not in mine]:
        o, p = mine.get(key), index.get(key)
        agree = (o is not None and p is not None and normalized(o.rc) == normalized(p.rc) and o.shape == p.shape)
        rows.append(Row(key[0], key[1], o.rc if o else None, p.rc if p else None, o.shape if o else None,
                        p.shape if p else None, agree, None if agree else known(*key, o, p)))
    return rows


def steps_to_json(steps: list[Step]) -> list[dict]:
    return [asdict(s) for s in steps]


def steps_from_json(rows: list[dict]) -> list[Step]:
    return [Step(**r) for r in rows]


def tally(rows: list[Row]) -> dict[str, int]:
    """Steps compared, agreeing, differing for a known reason, differing unexplained."""
    return {"compared": len(rows), "agree": sum(r.agree for r in rows),
            "known": sum(not r.agree and r.known is not None for r in rows),
            "unexplained": sum(not r.agree and r.known is None for r in rows)}
