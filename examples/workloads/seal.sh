#!/bin/sh
# Disk unlock with tpm2-tools: seal a key to a PCR policy under an ECC storage primary, then (at boot)
# load and unseal it through a policy session that checks the PCRs.
# Usage: TPM2TOOLS_TCTI=swtpm:port=P seal.sh   (run in an empty working directory)
set -eu
printf 'a 32-byte disk encryption key..!' > secret.bin
tpm2_createprimary -C o -G ecc -c prim.ctx
tpm2_pcrread -o pcr.bin sha256:0,1,2,3,7
tpm2_createpolicy --policy-pcr -l sha256:0,1,2,3,7 -f pcr.bin -L pcr.policy
tpm2_create -C prim.ctx -L pcr.policy -i secret.bin -u seal.pub -r seal.priv
tpm2_load -C prim.ctx -u seal.pub -r seal.priv -c seal.ctx
tpm2_unseal -c seal.ctx -p pcr:sha256:0,1,2,3,7 > unsealed.bin
cmp secret.bin unsealed.bin
