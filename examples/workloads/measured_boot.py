"""A measured boot with tpm2-pytss: 30 PCR extends (firmware, boot loader, kernel, initrd ... into PCRs
0-7, SHA-256 bank), then an attestation key and a quote of PCRs 0-7 for the verifier.

Usage: python measured_boot.py swtpm:port=P
"""

import hashlib
import sys

from tpm2_pytss import (ESAPI, TCTILdr, TPM2B_DATA, TPML_DIGEST_VALUES, TPML_PCR_SELECTION, TPMT_HA,
                        TPMU_HA, TPMT_SIG_SCHEME, TPM2B_PUBLIC)
from tpm2_pytss.constants import ESYS_TR, TPM2_ALG

EXTENDS = 30


def main(tcti: str) -> None:
    name, _, conf = tcti.partition(":")
    with ESAPI(TCTILdr(name, conf)) as esys:
        for i in range(EXTENDS):
            digest = TPMT_HA(hashAlg=TPM2_ALG.SHA256, digest=TPMU_HA(sha256=hashlib.sha256(b"boot component %d" % i).digest()))
            esys.pcr_extend(ESYS_TR.PCR0 + (i % 8), TPML_DIGEST_VALUES([digest]))
        template = TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256:null", objectAttributes="restricted|sign|fixedtpm|fixedparent|"
                                      "sensitivedataorigin|userwithauth")
        ak, *_ = esys.create_primary(None, template, primary_handle=ESYS_TR.ENDORSEMENT)
        scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA)
        scheme.details.any.hashAlg = TPM2_ALG.SHA256
        esys.quote(ak, TPML_PCR_SELECTION.parse("sha256:0,1,2,3,4,5,6,7"), TPM2B_DATA(b"verifier nonce"), scheme)
        esys.flush_context(ak)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "swtpm:port=2321")
