"""``trustlab tpm2 pqc ...``: the TCG TPM 2.0 Library 1.85 post-quantum commands from the shell.

tpm2-tools 5.4 knows neither TPM2_SignDigest nor TPM_ALG_MLDSA, so these verbs
send the raw 1.85 frames themselves, to a ``trustlab serve`` (or any TPM that
implements them) named by a TCTI string. Under serve's resource manager a key
lives as long as the process that loaded it (as with tpm2-tools): save it with
``--context-out`` and name the file as ``--key`` in later invocations. The
profile below is the 1.85 chip in silicon, whose 8192-byte buffer carries every
parameter set; on a chip of today (TPM_PT_MAX_RESPONSE_SIZE 2048: st-st33*,
nuvoton-npct*) an ML-DSA-65 key's answer is TPM_RC_SIZE, as that chip would say.

    trustlab serve --profile sealsq-qvault-pqc-tpm-wolftpm --port 2321 &
    export TPM2TOOLS_TCTI=swtpm:port=2321
    trustlab tpm2 pqc createprimary --alg ML-DSA-65 --context-out key.ctx
    echo hello > msg.bin
    trustlab tpm2 pqc sign-digest --key key.ctx --message msg.bin --signature-out msg.sig
    trustlab tpm2 pqc verify-digest --key key.ctx --message msg.bin --signature msg.sig
"""

from __future__ import annotations

import argparse
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trustlab.cli._output import print_json
from trustlab.errors import TrustlabError
from trustlab.safe_output import path_arg

HIERARCHIES = {"owner": 0x40000001, "o": 0x40000001, "endorsement": 0x4000000B, "e": 0x4000000B,
               "platform": 0x4000000C, "p": 0x4000000C, "null": 0x40000007, "n": 0x40000007}
HASHES = {"sha256": 0x000B, "sha384": 0x000C, "sha512": 0x000D}
ALGORITHM_CHOICES = ("ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "ML-KEM-768", "ML-KEM-1024")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"{text}: expected 1..100000")
    return value


def _handle(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a handle (e.g. 0x80ff0000)") from None
    if not 0 <= value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"{text!r} is not a 32-bit handle")
    return value


def _auth(text: str) -> bytes:
    data = text.encode()
    if len(data) > 64:
        raise argparse.ArgumentTypeError("a password is at most 64 bytes")
    return data


MAX_CONTEXT_BYTES = 255  # FIPS 204: ctx is at most 255 bytes (its length is one byte of M')


def _context(text: str) -> bytes:
    """``--context``: its bytes (as the shell gave them, so UTF-8 for text), at most 255 of them (FIPS 204,
    Algorithm 2/4: ctx's length is one byte), refused here rather than as a traceback when mu is formed."""
    data = os.fsencode(text)
    if len(data) > MAX_CONTEXT_BYTES:
        raise argparse.ArgumentTypeError(f"{len(data)} bytes; a FIPS 204 context string is at most "
                                         f"{MAX_CONTEXT_BYTES} bytes")
    return data


def tcti_arg(text: str) -> str:
    """``--tcti``: an empty string would make TCTILdr try every TCTI it knows, each failure a log line."""
    if not text.strip():
        raise TrustlabError("--tcti: empty; give e.g. swtpm:port=2321, mssim:port=2321 or device:/dev/tpmrm0")
    if "\0" in text or len(text) > 4096:
        raise TrustlabError("--tcti: not a TCTI string (a NUL character, or longer than 4096 characters)")
    return text


def quiet_tss() -> None:
    """Silence the TSS's own logging (its ERROR/WARNING lines on stderr), unless the user set TSS2_LOG:
    a failure reaches the user once, as our one-line error."""
    os.environ.setdefault("TSS2_LOG", "all+NONE")


MAX_BLOB_BYTES = 16 * 1024 * 1024  # a message, a signature, a context: a TPM's are a few KiB


def read_user_bytes(path: Path, what: str) -> bytes:
    """A user-named file's bytes, bounded, a regular file only (no FIFO, no device): else one line."""
    from trustlab import limits

    return limits.read_bytes(path, what, MAX_BLOB_BYTES)


def _read_context(path: Path) -> bytes:
    """A --key context file's bytes, refused in one line naming the file and the byte offset unless it is one
    whole TPMS_CONTEXT (so nothing malformed, and never an empty context, reaches the TPM)."""
    from trustlab.devices.tpm2.pqc.structures import context_problem
    from trustlab.limits import shown

    data = read_user_bytes(path, "key context")
    problem = context_problem(data)
    if problem is not None:
        raise TrustlabError(f"--key {shown(path)}: not a key context: {problem}")
    return data


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tpm2", help="TPM 2.0 commands tpm2-tools does not know (TCG 1.85 post-quantum)",
                       description="TPM 2.0 commands beyond tpm2-tools 5.4.")
    groups = p.add_subparsers(dest="tpm2_group", metavar="GROUP", required=True)
    pqc = groups.add_parser("pqc", help="ML-KEM / ML-DSA keys and commands (TCG TPM 2.0 Library 1.85)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = pqc.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help_, description=help_, epilog=f"example: trustlab tpm2 pqc {example}")
        v.add_argument("--tcti", type=tcti_arg, default=os.environ.get("TPM2TOOLS_TCTI") or "swtpm:port=2321",
                       help="TCTI of the TPM (default $TPM2TOOLS_TCTI, else swtpm:port=2321); swtpm:/mssim: are "
                       "spoken directly, others through tpm2-pytss's TCTILdr")
        v.add_argument("--json", action="store_true", help="machine-readable output")
        return v

    def key_auth(v: argparse.ArgumentParser, what: str = "the key's password (password session)") -> None:
        v.add_argument("--key-auth", type=_auth, default=b"", metavar="PASSWORD", help=what)

    def key_arg(v: argparse.ArgumentParser, kind: str) -> None:
        v.add_argument("--key", required=True, metavar="KEY",
                       help=f"{kind} key: a handle (0x80ff0000) or a context file from --context-out")

    def context_out(v: argparse.ArgumentParser) -> None:
        v.add_argument("--context-out", type=path_arg, metavar="FILE",
                       help="also save the key's context here (TPM2_ContextSave): later verbs take it as --key, "
                       "which survives a resource manager that flushes keys when this process ends")

    def template_args(v: argparse.ArgumentParser) -> None:
        v.add_argument("--alg", required=True, choices=ALGORITHM_CHOICES, help="key algorithm and parameter set")
        v.add_argument("--hash", choices=tuple(HASHES), help="make an ML-DSA key HashML-DSA with this pre-hash")
        v.add_argument("--no-external-mu", action="store_true",
                       help="ML-DSA: allowExternalMu=NO (the key then signs only through sign sequences)")
        key_auth(v, "password of the new key (its userAuth)")
        v.add_argument("--public-out", type=path_arg, metavar="FILE", help="write the TPMT_PUBLIC here")

    v = verb("createprimary", "create a PQC primary key (derived from the hierarchy seed) and load it",
             "createprimary --alg ML-DSA-65 --context-out key.ctx --json")
    template_args(v)
    v.add_argument("--hierarchy", choices=tuple(HIERARCHIES), default="owner", help="hierarchy (default owner)")
    v.add_argument("--hierarchy-auth", type=_auth, default=b"", metavar="PASSWORD", help="hierarchy password")
    context_out(v)
    v.set_defaults(handler=run_createprimary)

    v = verb("create", "create a PQC key under a storage parent; writes its private blob and public area",
             "create --parent 0x80000000 --alg ML-KEM-768 --private-out k.priv --public-out k.pub")
    template_args(v)
    v.add_argument("--parent", type=_handle, required=True, help="storage parent handle (e.g. an SRK)")
    v.add_argument("--parent-auth", type=_auth, default=b"", metavar="PASSWORD", help="parent's password")
    v.add_argument("--private-out", type=path_arg, required=True, metavar="FILE", help="write the TPM2B_PRIVATE here")
    v.set_defaults(handler=run_create)

    v = verb("load", "load a PQC key created by 'create' under the same parent",
             "load --parent 0x80000000 --private k.priv --public k.pub")
    v.add_argument("--parent", type=_handle, required=True, help="storage parent handle")
    v.add_argument("--parent-auth", type=_auth, default=b"", metavar="PASSWORD", help="parent's password")
    v.add_argument("--private", type=Path, required=True, metavar="FILE", help="private blob from 'create'")
    v.add_argument("--public", type=Path, required=True, metavar="FILE", help="public area from 'create'")
    context_out(v)
    v.set_defaults(handler=run_load)

    def message_args(v: argparse.ArgumentParser) -> None:
        src = v.add_mutually_exclusive_group(required=True)
        src.add_argument("--message", type=Path, metavar="FILE",
                         help="message file: the client computes the external mu (ML-DSA) or PH(M) (HashML-DSA)")
        src.add_argument("--digest", metavar="HEX", help="the digest parameter as is (mu, or PH(M))")
        v.add_argument("--context", type=_context, default=b"", metavar="TEXT",
                       help=f"FIPS 204 context string (HashML-DSA/mu), at most {MAX_CONTEXT_BYTES} bytes")
        key_arg(v, "ML-DSA")

    v = verb("sign-digest", "TPM2_SignDigest: sign an external mu / pre-hash with an ML-DSA key",
             "sign-digest --key key.ctx --message msg.bin --signature-out msg.sig")
    message_args(v)
    key_auth(v)
    v.add_argument("--signature-out", type=path_arg, metavar="FILE", help="write the raw signature here")
    v.set_defaults(handler=run_sign)

    v = verb("verify-digest", "TPM2_VerifyDigestSignature in the TPM, and cryptography's verify beside it",
             "verify-digest --key key.ctx --message msg.bin --signature msg.sig")
    message_args(v)
    v.add_argument("--signature", type=Path, required=True, metavar="FILE", help="raw signature file")
    v.set_defaults(handler=run_verify)

    v = verb("encapsulate", "TPM2_Encapsulate: a fresh shared secret and its ML-KEM ciphertext",
             "encapsulate --key kem.ctx --ciphertext-out ct.bin --json")
    key_arg(v, "ML-KEM")
    v.add_argument("--ciphertext-out", type=path_arg, metavar="FILE", help="write the ciphertext here")
    v.set_defaults(handler=run_encapsulate)

    v = verb("decapsulate", "TPM2_Decapsulate: the shared secret inside an ML-KEM ciphertext",
             "decapsulate --key kem.ctx --ciphertext ct.bin --json")
    key_arg(v, "ML-KEM")
    v.add_argument("--ciphertext", type=Path, required=True, metavar="FILE", help="ciphertext file")
    key_auth(v)
    v.set_defaults(handler=run_decapsulate)

    v = verb("quote", "TPM2_Quote with an ML-DSA key: a TPMS_ATTEST over PCRs, checked with cryptography",
             "quote --key ak.ctx --pcrs 0,1,2,7 --qualifying 6e6f6e6365 --attest-out q.attest --json")
    key_arg(v, "ML-DSA")
    v.add_argument("--pcrs", default="0,1,2,3,4,5,6,7", metavar="LIST", help="SHA-256 PCRs (default 0-7)")
    v.add_argument("--qualifying", default="", metavar="HEX", help="qualifyingData (a verifier's nonce)")
    key_auth(v)
    v.add_argument("--attest-out", type=path_arg, metavar="FILE", help="write the TPMS_ATTEST here")
    v.add_argument("--signature-out", type=path_arg, metavar="FILE", help="write the raw signature here")
    v.set_defaults(handler=run_quote)

    v = verb("measure", "time the PQC commands from the client (rows 'trustlab fit' reads, like 'trustlab measure')",
             "measure --alg ML-DSA-65 --alg ML-KEM-768 --repeat 20 --out pqc.csv")
    v.add_argument("--alg", action="append", choices=ALGORITHM_CHOICES, metavar="ALG",
                   help=f"algorithm (repeatable; default all: {', '.join(ALGORITHM_CHOICES)})")
    v.add_argument("--repeat", type=_positive, default=10, help="repetitions per command (default 10)")
    v.add_argument("--out", type=path_arg, metavar="FILE.csv", help="write the rows as CSV")
    v.set_defaults(handler=run_measure)

    from trustlab.safe_output import add_force

    for v in verbs.choices.values():  # every verb that writes a file takes --force, and only those
        flags = ["--" + a.dest.replace("_", "-") for a in v._actions if a.dest in OUTPUTS]
        if flags:
            add_force(v, "/".join(flags))

    v = verb("flush", "TPM2_FlushContext of a PQC key", "flush --key 0x80ff0000")
    v.add_argument("--key", type=_handle, required=True, help="handle to flush")
    v.set_defaults(handler=run_flush)


# ---- verbs ---------------------------------------------------------------------


@contextmanager
def _client(args: argparse.Namespace) -> Iterator:
    """A client for ``args.tcti``; a ``--key`` naming a context file is loaded now and flushed at the end."""
    from trustlab.devices.tpm2.pqc.client import PqcClient

    _check_outputs(args)
    quiet_tss()
    with PqcClient.connect(args.tcti) as tpm:
        loaded = None
        ref = getattr(args, "key", None)
        if isinstance(ref, str):
            try:
                args.key = _handle(ref)
            except argparse.ArgumentTypeError:
                loaded = tpm.context_load(_read_context(Path(ref)))
                args.key = loaded.handle
        try:
            yield tpm
        finally:
            if loaded is not None:
                tpm.flush(loaded.handle)


def _template(args: argparse.Namespace):
    from trustlab.devices.tpm2.pqc.client import template

    if (args.hash or args.no_external_mu) and not args.alg.startswith("ML-DSA"):
        raise TrustlabError(f"--hash/--no-external-mu apply to ML-DSA keys, not {args.alg}")
    return template(args.alg, hash_alg=HASHES[args.hash] if args.hash else None,
                    allow_external_mu=not args.no_external_mu)


OUTPUTS = ("context_out", "public_out", "private_out", "signature_out", "ciphertext_out", "attest_out", "out")
INPUTS = ("message", "signature", "ciphertext", "private", "public", "key")


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output file is checked before the TPM is spoken to: not an input, not a FIFO or a
    directory, a name the system accepts, a writable place, not an existing file without --force
    (safe_output's rules; unlike tpm2-tools, which replaces it)."""
    from trustlab.safe_output import check_outputs

    outputs = {"--" + name.replace("_", "-"): getattr(args, name) for name in OUTPUTS if hasattr(args, name)}
    if outputs:
        check_outputs(outputs, force=args.force, inputs=[getattr(args, name, None) for name in INPUTS])


def _write(path: Path | None, data: bytes, flag: str) -> None:
    """Atomically (a temp file renamed over it): never half a key context, never into a FIFO."""
    from trustlab.safe_output import reported, write_bytes

    if path is None:
        return
    with reported(path, flag):
        write_bytes(path, data)


def _show(args: argparse.Namespace, data: dict) -> int:
    if args.json:
        print_json(data)
    else:
        for k, v in data.items():
            print(f"{k}: {v}")
    return 0


def _key_info(key) -> dict:
    from trustlab.devices.tpm2.pqc import keys

    ps = keys.parameter_set(key.public.type, key.public.parameter_set)
    return {"handle": f"{key.handle:#010x}", "algorithm": ps.algorithm if ps else None,
            "name": key.name.hex(), "public_key_bytes": len(key.public.unique)}


def run_createprimary(args: argparse.Namespace) -> int:
    pub = _template(args)
    with _client(args) as tpm:
        key = tpm.create_primary(pub, hierarchy=HIERARCHIES[args.hierarchy], auth=args.key_auth,
                                 hierarchy_auth=args.hierarchy_auth)
        if args.context_out is not None:
            _write(args.context_out, tpm.context_save(key.handle), "--context-out")
    _write(args.public_out, key.public.marshal(), "--public-out")
    return _show(args, _key_info(key))


def run_create(args: argparse.Namespace) -> int:
    pub = _template(args)
    with _client(args) as tpm:
        private, public = tpm.create(args.parent, pub, parent_auth=args.parent_auth, auth=args.key_auth)
    _write(args.private_out, private, "--private-out")
    _write(args.public_out, public, "--public-out")
    return _show(args, {"private_bytes": len(private), "public_bytes": len(public)})


def run_load(args: argparse.Namespace) -> int:
    private = read_user_bytes(args.private, "private blob")
    public = read_user_bytes(args.public, "public area")
    with _client(args) as tpm:
        key = tpm.load(args.parent, private, public, parent_auth=args.parent_auth)
        if args.context_out is not None:
            _write(args.context_out, tpm.context_save(key.handle), "--context-out")
    return _show(args, _key_info(key))


def _digest(args: argparse.Namespace, tpm) -> tuple[object, bytes, bytes]:
    """(loaded key's public area, digest parameter, message or b"") for sign/verify verbs."""
    from trustlab.devices.tpm2.pqc import structures as S
    from trustlab.devices.tpm2.pqc.client import external_mu

    public, _name, _qn = tpm.read_public(args.key)
    context = args.context
    if args.digest is not None:
        if context and public.type != S.TPM_ALG_HASH_MLDSA:  # an external mu already holds the context
            raise TrustlabError("--context: with --digest, applies only to a HashML-DSA key (for this key the "
                                "digest is the external mu, which already holds the context); drop --context or "
                                "give --message")
        try:
            return public, bytes.fromhex(args.digest), b""
        except ValueError:
            raise TrustlabError(f"--digest {args.digest!r}: not hex") from None
    message = read_user_bytes(args.message, "message")
    if public.type == S.TPM_ALG_HASH_MLDSA:
        return public, S.digest(public.hash_alg, message), message
    return public, external_mu(public.unique, message, context), message


def _needs_sequence(public, message: bytes) -> bool:
    """A pure ML-DSA key without allowExternalMu signs a message only through a sign sequence."""
    from trustlab.devices.tpm2.pqc import structures as S

    return public.type == S.TPM_ALG_MLDSA and not public.allow_external_mu and bool(message)


def run_sign(args: argparse.Namespace) -> int:
    import hashlib

    from trustlab.devices.tpm2.pqc import structures as S

    with _client(args) as tpm:
        public, digest, message = _digest(args, tpm)
        if _needs_sequence(public, message):
            signature = tpm.sign_sequence(args.key, message, context=args.context, auth=args.key_auth)
        else:
            context = args.context if public.type == S.TPM_ALG_HASH_MLDSA else b""
            signature = tpm.sign_digest(args.key, digest, context=context, auth=args.key_auth)
    _write(args.signature_out, signature, "--signature-out")
    return _show(args, {"signature_bytes": len(signature),
                        "signature_sha256": hashlib.sha256(signature).hexdigest()})


def run_verify(args: argparse.Namespace) -> int:
    from trustlab.devices.tpm2.pqc import structures as S
    from trustlab.devices.tpm2.pqc.client import LoadedKey, TpmResponseError, public_key

    signature = read_user_bytes(args.signature, "signature")
    with _client(args) as tpm:
        public, digest, message = _digest(args, tpm)
        context = args.context if public.type == S.TPM_ALG_HASH_MLDSA else b""
        key = LoadedKey(args.key, public, public.name())
        try:
            if _needs_sequence(public, message):
                tpm.verify_sequence(key, message, signature, context=args.context)
            else:
                tpm.verify_digest_signature(key, digest, signature, context=context)
            tpm_ok, tpm_rc = True, 0
        except TpmResponseError as exc:
            tpm_ok, tpm_rc = False, exc.rc
    independent = None
    if public.type != S.TPM_ALG_HASH_MLDSA:
        try:
            key = public_key(public)
            if message:
                key.verify(signature, message, args.context)
            else:
                key.verify_mu(signature, digest)
            independent = True
        except Exception:  # noqa: BLE001 - InvalidSignature, ValueError for a malformed signature
            independent = False
    _show(args, {"tpm_verified": tpm_ok, "tpm_rc": f"{tpm_rc:#x}", "cryptography_verified": independent})
    return 0 if tpm_ok and independent is not False else 1


def run_encapsulate(args: argparse.Namespace) -> int:
    with _client(args) as tpm:
        secret, ciphertext = tpm.encapsulate(args.key)
    _write(args.ciphertext_out, ciphertext, "--ciphertext-out")
    return _show(args, {"shared_secret": secret.hex(), "ciphertext_bytes": len(ciphertext)})


def run_decapsulate(args: argparse.Namespace) -> int:
    ciphertext = read_user_bytes(args.ciphertext, "ciphertext")
    with _client(args) as tpm:
        secret = tpm.decapsulate(args.key, ciphertext, auth=args.key_auth)
    return _show(args, {"shared_secret": secret.hex()})


def _pcr_list(text: str) -> list[int]:
    """``--pcrs``: SHA-256 PCR indices 0..23, comma-separated; a wrong one is named alone."""
    pcrs = []
    for item in text.split(","):
        if not item.strip():
            raise TrustlabError(f"--pcrs {text!r}: an empty item (give indices like 0,1,7)")
        try:
            index = int(item)
        except ValueError:
            raise TrustlabError(f"--pcrs {text!r}: {item.strip()!r} is not a PCR index (e.g. 0,1,7)") from None
        if not 0 <= index <= 23:
            raise TrustlabError(f"--pcrs {text!r}: PCR {index} out of range 0..23")
        pcrs.append(index)
    return pcrs


def run_quote(args: argparse.Namespace) -> int:
    from trustlab.devices.tpm2.pqc import structures as S
    from trustlab.devices.tpm2.pqc.client import public_key

    pcrs = _pcr_list(args.pcrs)
    try:
        qualifying = bytes.fromhex(args.qualifying)
    except ValueError:
        raise TrustlabError(f"--qualifying {args.qualifying!r}: not hex (e.g. 6e6f6e6365)") from None
    with _client(args) as tpm:
        public, _name, _qn = tpm.read_public(args.key)
        attest, signature = tpm.quote(args.key, pcrs, qualifying=qualifying, auth=args.key_auth)
    _write(args.attest_out, attest, "--attest-out")
    _write(args.signature_out, signature, "--signature-out")
    verified = None
    if public.type == S.TPM_ALG_MLDSA:
        try:
            public_key(public).verify(signature, attest)
            verified = True
        except Exception:  # noqa: BLE001 - InvalidSignature or a malformed signature
            verified = False
    _show(args, {"attest_bytes": len(attest), "signature_bytes": len(signature),
                 "cryptography_verified": verified})
    return 0 if verified is not False else 1


def run_measure(args: argparse.Namespace) -> int:
    import sys

    from trustlab.textable import table
    from trustlab.devices.tpm2 import harness
    from trustlab.devices.tpm2.pqc.client import measure

    _check_outputs(args)  # a name too long, a FIFO, an input: one line, before anything else
    if args.out is not None:
        harness.check_output(args.out)
    with _client(args) as tpm:
        rows = measure(tpm, tuple(args.alg or ALGORITHM_CHOICES), args.repeat,
                       progress=lambda c, v: print(f"  {c}[{v}]", file=sys.stderr, flush=True))
    if args.out is not None:
        harness.write_csv(rows, args.out)
    if args.json:
        print_json([{f: getattr(r, f) for f in harness.FIELDS} for r in rows])
    else:
        print(table([(r.command, r.variant, r.ms, r.p50, r.p95, r.n) for r in rows],
                    ["command", "variant", "mean ms", "p50", "p95", "n"]))
    return 0


def run_flush(args: argparse.Namespace) -> int:
    with _client(args) as tpm:
        tpm.flush(args.key)
    return _show(args, {"flushed": f"{args.key:#010x}"})
