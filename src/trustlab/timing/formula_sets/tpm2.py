"""TPM 2.0 cost formulas: the 2010 paper's method ported to TPM 2.0.

Gunupudi & Tate model a command as a constant overhead, a cost per input and
per output byte, and the cryptographic work it does. TPM 2.0 keeps that shape;
what changes is that the asymmetric work depends on the *key* (RSA-2048 or
P-256), so commands that use a key have one formula per key variant
(``TPM2_Sign[ecc256]``, ``TPM2_Sign[rsa2048]``).

The rule table (:data:`CRYPTO`) is the single source of truth: the timing
proxy applies it to the sizes it reads off the wire, and the formulas
registered here apply it to the wire sizes of the measurement suite
(:data:`SIZES`, recorded from swtpm by the trace of ``trustlab measure``).
A test holds the two to agreement, so ``trustlab fit`` on harness output
recovers exactly the components the proxy charged.

Components (family ``tpm2``): ``ohc`` per call, ``ohir``/``ohor`` per input/
output byte, ``sha256_byte`` per hashed byte, ``hmac`` per HMAC, and per key
variant V: ``V_sign``, ``V_verify`` (ECC), ``V_enc``/``V_dec`` (RSA public/
private operation), ``V_ecdh``, ``V_keygen`` (a distribution), plus
``nv_write`` and ``nv_increment`` per NV update.
"""

from __future__ import annotations

from trustlab.timing.formulas import register

FAMILY = "tpm2"
SOURCE = "trustlab TPM 2.0 model (overhead + bytes + crypto, after Gunupudi & Tate 2010 Sec. III)"

KEY_USE = {
    # command: (what the key does, index of the key handle among the command's handles)
    "TPM2_Sign": ("sign", 0), "TPM2_Quote": ("sign", 0), "TPM2_Certify": ("sign", 1),
    "TPM2_CertifyCreation": ("sign", 0), "TPM2_GetTime": ("sign", 1), "TPM2_NV_Certify": ("sign", 0),
    "TPM2_VerifySignature": ("verify", 0), "TPM2_RSA_Encrypt": ("enc", 0), "TPM2_RSA_Decrypt": ("dec", 0),
    "TPM2_ECDH_KeyGen": ("ecdh", 0), "TPM2_ECDH_ZGen": ("ecdh", 0), "TPM2_StartAuthSession": ("salt", 0),
}
"""Commands whose cost depends on the algorithm of a key named by handle."""

KEYGEN = ("TPM2_CreatePrimary", "TPM2_Create", "TPM2_CreateLoaded")
"""Commands that generate a key of the template's algorithm."""

HASHING = ("TPM2_Hash", "TPM2_SequenceUpdate", "TPM2_SequenceComplete", "TPM2_EventSequenceComplete",
           "TPM2_HMAC")
"""Commands that hash their data buffer (charged per byte)."""

NV_UPDATE = {"TPM2_NV_Write": "nv_write", "TPM2_NV_SetBits": "nv_write", "TPM2_NV_Extend": "nv_write",
             "TPM2_NV_DefineSpace": "nv_write", "TPM2_NV_UndefineSpace": "nv_write",
             "TPM2_EvictControl": "nv_write", "TPM2_NV_Increment": "nv_increment"}

OVERHEAD_ONLY = (
    "TPM2_Load", "TPM2_LoadExternal", "TPM2_Unseal", "TPM2_GetRandom", "TPM2_NV_Read", "TPM2_PolicyPCR",
    "TPM2_PolicyAuthValue", "TPM2_PolicyPassword", "TPM2_PolicyCommandCode", "TPM2_PolicyGetDigest",
    "TPM2_PolicyRestart", "TPM2_PolicySecret", "TPM2_FlushContext", "TPM2_Startup", "TPM2_Shutdown",
    "TPM2_GetCapability", "TPM2_ReadPublic", "TPM2_PCR_Read", "TPM2_PCR_Extend", "TPM2_ContextSave",
    "TPM2_ContextLoad", "TPM2_HashSequenceStart", "TPM2_HMAC_Start", "TPM2_NV_ReadPublic",
    "TPM2_SelfTest", "TPM2_TestParms", "TPM2_ReadClock", "TPM2_GetTestResult", "TPM2_StirRandom",
)
"""Commands modelled as overhead + bytes only (no primitive of their own in the model)."""


def is_modelled(command: str) -> bool:
    return (command in KEY_USE or command in KEYGEN or command in HASHING or command in NV_UPDATE
            or command in OVERHEAD_ONLY)


def crypto_terms(command: str, variant: str | None, hashed_bytes: int = 0) -> dict[str, float]:
    """Primitive work of one successful command, as ``{component: count}``.

    ``variant`` is the key's algorithm (``rsa2048``, ``ecc256`` ...) for key
    users and key generators. Error-aborted commands do no primitive work:
    callers pass only the overhead terms for them (that is how the harness's
    error variants isolate the overheads, as the paper did with TPM 1.2).
    """
    terms: dict[str, float] = {}
    if command in KEYGEN:
        if variant and (variant.startswith("rsa") or variant.startswith("ecc")):
            terms[f"{variant}_keygen"] = 1
    elif command in KEY_USE and variant:
        use = KEY_USE[command][0]
        rsa = variant.startswith("rsa")
        if use == "verify":
            terms[f"{variant}_enc" if rsa else f"{variant}_verify"] = 1
        elif use == "salt":
            terms[f"{variant}_dec" if rsa else f"{variant}_ecdh"] = 1
        elif use in ("enc", "dec") and not rsa:
            pass
        elif use == "ecdh" and rsa:
            pass
        else:
            terms[f"{variant}_{use}"] = 1
    if command == "TPM2_HMAC":
        terms["hmac"] = 1
    if command in HASHING and hashed_bytes:
        terms["sha256_byte"] = hashed_bytes
    if command in NV_UPDATE:
        terms[NV_UPDATE[command]] = 1
    return terms


def command_terms(command: str, variant: str | None, in_bytes: int, out_bytes: int,
                  hashed_bytes: int = 0, ok: bool = True) -> dict[str, float]:
    """The full formula: overhead + per byte + (if the command succeeded) crypto."""
    terms: dict[str, float] = {"ohc": 1, "ohir": in_bytes, "ohor": out_bytes}
    if ok:
        terms.update(crypto_terms(command, variant, hashed_bytes))
    return terms


# Wire sizes (input bytes, output bytes, hashed bytes, succeeded) of the
# measurement suite's commands, recorded from swtpm 0.7.1 through the proxy's
# trace by tools/build_tpm2_profiles.py --sizes. Variant names follow the
# harness: key algorithm, data size, or the error that aborted the command.
SIZES: dict[tuple[str, str], tuple[int, int, int, bool]] = {
    ('TPM2_GetRandom', '32'): (12, 44, 0, True),
    ('TPM2_Hash', '32'): (50, 116, 32, True),
    ('TPM2_Hash', '1024'): (1042, 116, 1024, True),
    ('TPM2_NV_Write', '32'): (67, 19, 0, True),
    ('TPM2_NV_Write', '1024'): (1059, 19, 0, True),
    ('TPM2_NV_Read', '32'): (35, 53, 0, True),
    ('TPM2_NV_Read', '1024'): (35, 1045, 0, True),
    ('TPM2_NV_Increment', 'counter'): (31, 19, 0, True),
    ('TPM2_Sign', 'ecc256'): (73, 91, 0, True),
    ('TPM2_Sign', 'bad-handle'): (73, 10, 0, False),
    ('TPM2_CreatePrimary', 'rsa2048'): (65, 504, 0, True),
    ('TPM2_CreatePrimary', 'ecc256'): (65, 312, 0, True),
    ('TPM2_Create', 'rsa2048'): (65, 748, 0, True),
    ('TPM2_Create', 'ecc256'): (65, 460, 0, True),
    ('TPM2_Create', 'seal'): (87, 450, 0, True),
    ('TPM2_Load', 'rsa2048'): (533, 59, 0, True),
    ('TPM2_Load', 'ecc256'): (245, 59, 0, True),
    ('TPM2_FlushContext', 'ecc256'): (14, 10, 0, True),
    ('TPM2_Sign', 'rsa2048'): (73, 281, 0, True),
    ('TPM2_VerifySignature', 'rsa2048'): (310, 82, 0, True),
    ('TPM2_VerifySignature', 'ecc256'): (120, 82, 0, True),
    ('TPM2_RSA_Encrypt', 'rsa2048'): (54, 268, 0, True),
    ('TPM2_RSA_Decrypt', 'rsa2048'): (291, 53, 0, True),
    ('TPM2_HMAC', '32'): (63, 53, 32, True),
    ('TPM2_HMAC', '1024'): (1055, 53, 1024, True),
    ('TPM2_NV_DefineSpace', '32'): (45, 19, 0, True),
    ('TPM2_Quote', 'ecc256'): (59, 222, 0, True),
    ('TPM2_Quote', 'rsa2048'): (59, 412, 0, True),
    ('TPM2_StartAuthSession', 'unsalted'): (63, 48, 0, True),
    ('TPM2_StartAuthSession', 'ecc256-salted'): (131, 48, 0, True),
    ('TPM2_StartAuthSession', 'rsa2048-salted'): (319, 48, 0, True),
    ('TPM2_PolicyPCR', 'sha256'): (26, 10, 0, True),
    ('TPM2_Unseal', 'seal'): (27, 53, 0, True),
    ('TPM2_Sign', 'bad-auth'): (87, 10, 0, False),
    ('TPM2_Sign', 'wrong-key'): (73, 10, 0, False),
    ('TPM2_NV_Read', 'bad-auth'): (49, 10, 0, False),
}

OVERHEAD_SIZES: dict[str, tuple[int, int]] = {
    "TPM2_GetCapability": (22, 43), "TPM2_PCR_Read": (20, 62), "TPM2_PCR_Extend": (65, 19),
    "TPM2_ContextSave": (14, 1268), "TPM2_ContextLoad": (1268, 14), "TPM2_EvictControl": (99, 83),
    "TPM2_ReadPublic": (14, 366), "TPM2_NV_ReadPublic": (14, 62), "TPM2_NV_UndefineSpace": (95, 83),
    "TPM2_SelfTest": (11, 10), "TPM2_GetTestResult": (10, 16), "TPM2_ReadClock": (10, 35),
    "TPM2_StirRandom": (20, 10), "TPM2_TestParms": (22, 10), "TPM2_DictionaryAttackLockReset": (91, 83),
    "TPM2_Clear": (91, 83), "TPM2_Shutdown": (12, 10), "TPM2_Startup": (12, 10),
}
"""Wire sizes (input, output bytes) of commands the suite does not time but serve charges (overhead +
bytes, plus an NV update for EvictControl/NV_UndefineSpace), recorded from swtpm 0.7.1 through serve's
trace with tpm2-tools 5.x: ``tpm2_pcrread sha256:0``, ``tpm2_getcap properties-fixed``,
``tpm2_evictcontrol`` (with the tools' HMAC session), ``tpm2_readpublic`` of an ECC primary ..."""

MINIMAL_FRAME = (10, 10)
"""Sizes assumed for a command with neither a suite nor a recorded size: a bare header each way."""

OVERHEAD_COMPONENTS = ("ohc", "ohir", "ohor")


DEFAULT_VARIANT = {"TPM2_Hash": "1024", "TPM2_HMAC": "1024", "TPM2_GetRandom": "32",
                   "TPM2_NV_Write": "32", "TPM2_NV_Read": "32", "TPM2_Create": "seal"}


def _key_of(variant: str) -> str | None:
    """The key algorithm inside a harness variant (``rsa2048``, ``ecc256-salted`` ...)."""
    head = variant.split("-")[0]
    return head if head.startswith(("rsa", "ecc")) else None


def _register_all() -> None:
    for (command, variant), (n_in, n_out, n_hash, ok) in SIZES.items():
        terms = command_terms(command, _key_of(variant), n_in, n_out, n_hash, ok)
        src = f"{SOURCE}; wire sizes {n_in} in / {n_out} out bytes from swtpm 0.7.1"
        register(FAMILY, f"{command}[{variant}]", terms, source=src)
    for command in dict.fromkeys(c for c, _ in SIZES):
        variants = [v for c, v in SIZES if c == command]
        default = DEFAULT_VARIANT.get(command)
        if default is None and len(variants) == 1:
            default = variants[0]
        if default in variants:
            n_in, n_out, n_hash, ok = SIZES[(command, default)]
            register(FAMILY, command, command_terms(command, _key_of(default), n_in, n_out, n_hash, ok),
                     source=f"{SOURCE}; variant {default}, {n_in} in / {n_out} out bytes",
                     aliases=(command.removeprefix("TPM2_"),))

    for command, (n_in, n_out) in OVERHEAD_SIZES.items():
        register(FAMILY, command, command_terms(command, None, n_in, n_out),
                 source=f"{SOURCE}; overhead + bytes, {n_in} in / {n_out} out bytes recorded from swtpm 0.7.1 "
                 "with tpm2-tools", aliases=(command.removeprefix("TPM2_"),))


_register_all()
