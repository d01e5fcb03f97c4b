"""A TLS-style key with tpm2-pytss: create an ECC P-256 signing key once, then 100 ECDSA signatures
(one per handshake's CertificateVerify), as a TLS server with a TPM-resident key does.

Usage: python tls_key.py swtpm:port=P
"""

import hashlib
import sys

from tpm2_pytss import ESAPI, TCTILdr, TPM2B_DIGEST, TPM2B_PUBLIC, TPMT_SIG_SCHEME, TPMT_TK_HASHCHECK
from tpm2_pytss.constants import TPM2_ALG, TPM2_RH, TPM2_ST

SIGNS = 100


def main(tcti: str) -> None:
    name, _, conf = tcti.partition(":")
    with ESAPI(TCTILdr(name, conf)) as esys:
        parent, *_ = esys.create_primary(None, "ecc256")
        template = TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256",
                                      objectAttributes="userwithauth|sign|fixedtpm|fixedparent|sensitivedataorigin")
        priv, pub, *_ = esys.create(parent, None, template)
        key = esys.load(parent, priv, pub)
        esys.flush_context(parent)
        scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA)
        scheme.details.any.hashAlg = TPM2_ALG.SHA256
        ticket = TPMT_TK_HASHCHECK(tag=TPM2_ST.HASHCHECK, hierarchy=TPM2_RH.NULL)
        for i in range(SIGNS):
            digest = TPM2B_DIGEST(hashlib.sha256(b"handshake %d" % i).digest())
            esys.sign(key, digest, scheme, ticket)
        esys.flush_context(key)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "swtpm:port=2321")
