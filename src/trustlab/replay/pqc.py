"""``replay --pqc sign=ML-DSA-65,kem=ML-KEM-768``: the recorded workload with post-quantum keys.

The rewrite (TPM 2.0 Library 1.85 commands):

- a signing key's Sign becomes SignDigest (or SignSequenceStart / SequenceUpdate /
  SignSequenceComplete when the SignDigest command would not fit the chip's
  TPM_PT_MAX_COMMAND_SIZE); its Quote, Certify, CertifyCreation, GetTime and
  NV_Certify sign with ML-DSA; a VerifySignature becomes VerifyDigestSignature;
- RSA_Decrypt and ECDH_ZGen become Decapsulate; RSA_Encrypt and ECDH_KeyGen Encapsulate;
- the creation (CreatePrimary / Create / CreateLoaded) and Load of the keys
  that sign (``sign`` attribute) or decrypt outside the storage hierarchy
  (``decrypt`` and not ``restricted``) become post-quantum key creation and load.
  Storage parents (restricted decryption keys: SRK, EK), sealed objects and
  salted sessions keep their classical keys (no 1.85 profile changes them here).

Each rewritten command is priced by the post-quantum cost model exactly as
``trustlab run pqc-tpm`` prices the same operation
(:func:`trustlab.experiments.pqc_tpm.priced`: central estimate, 5-95% interval),
plus the bus time of the bytes by which the recorded frame differs from the
model's standard frame (a Quote carries its attestation structure). Everything
else keeps its classical price.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from trustlab.devices.tpm2.pqc_model import chips, chipspec, frames
from trustlab.devices.tpm2.pqc_model.params import ALGORITHMS, MLDSA, MLKEM, params
from trustlab.errors import TrustlabError
from trustlab.replay.load import Command

SIGNING = ("TPM2_Sign", "TPM2_Quote", "TPM2_Certify", "TPM2_CertifyCreation", "TPM2_GetTime", "TPM2_NV_Certify")
DECAPS = ("TPM2_RSA_Decrypt", "TPM2_ECDH_ZGen")
ENCAPS = ("TPM2_RSA_Encrypt", "TPM2_ECDH_KeyGen")
KEYGEN = ("TPM2_CreatePrimary", "TPM2_Create", "TPM2_CreateLoaded")
SEQ_COMMAND_OVERHEAD = 10 + 4 + 13 + 2
"""A SequenceUpdate's header, handle, password authorization and TPM2B size (as pqc_tpm's sequence rows)."""


@dataclass(frozen=True)
class Choice:
    sign: str | None
    kem: str | None

    def label(self) -> str:
        return ", ".join(x for x in (self.sign, self.kem) if x)


def parse_choice(text: str) -> Choice:
    """``sign=ML-DSA-65,kem=ML-KEM-768`` (either part may be left out)."""
    parts: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",") if x.strip()):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in ("sign", "kem"):
            raise TrustlabError(f"--pqc: {item!r} is not sign=ML-DSA-... or kem=ML-KEM-...")
        if key in parts:
            raise TrustlabError(f"--pqc: {key}= given twice")
        allowed = [a for a in ALGORITHMS if (a in MLDSA) == (key == "sign")]
        if value not in allowed:
            raise TrustlabError(f"--pqc: {key}={value!r} is not one of {', '.join(allowed)}")
        parts[key] = value
    if not parts:
        raise TrustlabError("--pqc: give sign=ML-DSA-65 and/or kem=ML-KEM-768")
    return Choice(parts.get("sign"), parts.get("kem"))


def _classical_sig(variant: str) -> int:
    """Bytes of a TPMT_SIGNATURE: ECDSA (sigAlg, hash, r, s) or RSASSA (sigAlg, hash, TPM2B)."""
    if variant.startswith("rsa"):
        return 2 + 2 + 2 + int(variant[3:] or 2048) // 8
    n = {"ecc384": 48, "ecc521": 66, "ecc192": 24, "ecc224": 28}.get(variant, 32)
    return 2 + 2 + 2 + n + 2 + n


def _classical_pub(variant: str) -> int:
    if variant.startswith("rsa"):
        return 2 + int(variant[3:] or 2048) // 8
    n = {"ecc384": 48, "ecc521": 66, "ecc192": 24, "ecc224": 28}.get(variant, 32)
    return 2 + n + 2 + n


@dataclass(frozen=True)
class Rewrite:
    """What one classical command becomes."""

    becomes: str
    algorithm: str
    operation: str        # the pqc_tpm row: keygen (= key creation on a TPM), load, sign, verify, en/decapsulate
    in_bytes: int
    out_bytes: int
    standard_bytes: int   # in + out of the model's standard frame of this operation

    @property
    def delta_bytes(self) -> int:
        return self.in_bytes + self.out_bytes - self.standard_bytes


def _standard(algorithm: str, operation: str) -> frames.Frame:
    if operation in ("keygen", "load"):
        create, load = frames.keygen_frames(algorithm)
        return create if operation == "keygen" else load
    return frames.use_frames(algorithm, operation)


def _make(algorithm: str, operation: str, becomes: str | None = None, n_in: int | None = None,
          n_out: int | None = None) -> Rewrite:
    f = _standard(algorithm, operation)
    return Rewrite(becomes or f.command, algorithm, operation, f.in_bytes if n_in is None else max(10, n_in),
                   f.out_bytes if n_out is None else max(10, n_out), f.in_bytes + f.out_bytes)


def rewrite(c: Command, choice: Choice) -> Rewrite | None:
    """The post-quantum form of one command, or None when it stays classical."""
    if not c.ok:
        return None
    v = c.variant or ""
    classical = v.startswith(("rsa", "ecc"))
    if choice.sign and c.command in SIGNING and classical:
        if c.command == "TPM2_Sign":
            return _make(choice.sign, "sign", "TPM2_SignDigest", c.in_bytes + 2,
                         c.out_bytes - _classical_sig(v) + 4 + params(choice.sign).sig_bytes)
        return _make(choice.sign, "sign", f"{c.command} ({choice.sign})", c.in_bytes,
                     c.out_bytes - _classical_sig(v) + 4 + params(choice.sign).sig_bytes)
    if choice.sign and c.command == "TPM2_VerifySignature" and classical:
        return _make(choice.sign, "verify")
    if choice.kem and classical and (c.command in DECAPS or c.command in ENCAPS):
        return _make(choice.kem, "decapsulate" if c.command in DECAPS else "encapsulate")
    key = c.key
    if key is None or not (key.get("alg") or "").startswith(("rsa", "ecc")):
        return None
    alg = key["alg"]
    algorithm = (choice.sign if key["sign"] else
                 choice.kem if key["decrypt"] and not key["restricted"] else None)
    if algorithm is None:
        return None
    pk = 2 + params(algorithm).pk_bytes
    if c.command in KEYGEN:
        return _make(algorithm, "keygen", f"{c.command} ({algorithm})", c.in_bytes,
                     c.out_bytes - _classical_pub(alg) + pk)
    if c.command == "TPM2_Load":
        return _make(algorithm, "load", f"TPM2_Load ({algorithm})", c.in_bytes - _classical_pub(alg) + pk, c.out_bytes)
    return None


@functools.lru_cache(maxsize=4096)
def _price(profile_name: str, algorithm: str, operation: str) -> dict:
    from trustlab.experiments.pqc_tpm import priced

    return priced(_chip(profile_name)[1], algorithm, operation, True)


@functools.lru_cache(maxsize=256)
def _chip(profile_name: str):
    from trustlab.timing import registry

    profile = registry.load(profile_name)  # a name or a .toml path: the chip is looked up by the profile's name
    return chips.chip_for(profile.name), chipspec.for_profile(profile)


@dataclass
class PricedRewrite:
    median_ms: float
    low_ms: float
    high_ms: float
    bus_ms: float
    fits: bool
    plan: str
    provenance: str


def price(r: Rewrite, profile_name: str) -> PricedRewrite:
    """One rewritten command on a chip: pqc-tpm's price of the operation + the bus time of extra bytes."""
    chip, spec = _chip(profile_name)
    base = _price(profile_name, r.algorithm, r.operation)
    per_byte = spec.bus_ms_per_byte()
    extra = r.delta_bytes * per_byte
    plan = r.becomes
    if r.becomes == "TPM2_SignDigest" and r.in_bytes > chip.max_command_size:
        chunk = chip.max_command_size - SEQ_COMMAND_OVERHEAD
        n = -(-(r.in_bytes - 40) // chunk)
        plan = f"TPM2_SignSequenceStart + {n} x TPM2_SequenceUpdate + TPM2_SignSequenceComplete"
        extra += (n + 1) * spec.ohc_ms + (n + 1) * SEQ_COMMAND_OVERHEAD * per_byte
    largest = max(r.in_bytes, r.out_bytes)
    return PricedRewrite(base["median_ms"] + extra, base["low_ms"] + extra, base["high_ms"] + extra,
                         (r.standard_bytes + r.delta_bytes) * per_byte, largest <= chip.max_command_size,
                         plan, base["provenance"])


def bus_ms_per_byte(profile_name: str) -> float:
    return _chip(profile_name)[1].bus_ms_per_byte()


def max_command_size(profile_name: str) -> int:
    return _chip(profile_name)[0].max_command_size


__all__ = ["Choice", "Rewrite", "parse_choice", "price", "rewrite", "MLKEM"]
