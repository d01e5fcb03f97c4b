#!/bin/sh
# Remote attestation with tpm2-tools: an ECC endorsement key, an ECC attestation key under it,
# a quote over PCRs 0-7 with a verifier's nonce, and the verifier's tpm2_checkquote (offline).
# Usage: TPM2TOOLS_TCTI=swtpm:port=P attestation.sh   (run in an empty working directory)
set -eu
tpm2_createek -c ek.ctx -G ecc -u ek.pub
tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub -f pem -n ak.name
tpm2_quote -c ak.ctx -l sha256:0,1,2,3,4,5,6,7 -q 0123456789abcdef -m quote.msg -s quote.sig -o quote.pcrs -g sha256
tpm2_checkquote -u ak.pub -m quote.msg -s quote.sig -f quote.pcrs -g sha256 -q 0123456789abcdef
