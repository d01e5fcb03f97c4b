/* Generate XMSS / XMSS^MT known-answer vectors with the XMSS reference implementation
 * (xmss-reference C code, as bundled in the PyPI package xmssmt-wrapper 0.1.15).
 * Lives in trustlab tests/hbs/data/ to document how xmss_reference.vec was made; not built by the project.
 * Build: gcc -O2 -I<xmss-reference> gen_xmss_reference_vectors.c <xmss-reference>/{xmss_core,xmss_commons,
 *        wots,hash,hash_address,params,utils,fips202,randombytes}.c -lcrypto
 * Output: one block per signature: Params (h/d/w), Seed (SK_SEED||SK_PRF||PUB_SEED), PublicKey
 * (root||PUB_SEED, no OID), Index, Msg, Signature. Custom small parameter sets are set up with
 * xmss_xmssmt_initialize_params, as the reference implementation documents. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "params.h"
#include "xmss_core.h"
#include "utils.h"

static void hex(const char *label, const unsigned char *b, unsigned long long n) {
    printf("%s = ", label);
    for (unsigned long long i = 0; i < n; i++) printf("%02x", b[i]);
    printf("\n");
}

static void run(unsigned h, unsigned d, unsigned w, const unsigned long long *idxs, int nidx) {
    xmss_params p;
    memset(&p, 0, sizeof p);
    p.func = XMSS_SHA2; p.n = 32; p.padding_len = 32; p.wots_w = w; p.full_height = h; p.d = d;
    if (xmss_xmssmt_initialize_params(&p)) { fprintf(stderr, "bad params\n"); exit(1); }
    unsigned char seed[96], pk[64];
    unsigned char *sk = malloc(p.sk_bytes);
    for (int i = 0; i < 96; i++) seed[i] = (unsigned char)(i * 7 + h + 16 * d + w);
    xmssmt_core_seed_keypair(&p, pk, sk, seed);
    for (int k = 0; k < nidx; k++) {
        char msg[32];
        int mlen = snprintf(msg, sizeof msg, "message %llu", idxs[k]);
        unsigned char *sm = malloc(p.sig_bytes + mlen);
        unsigned long long smlen;
        ull_to_bytes(sk, p.index_bytes, idxs[k]);
        if (xmssmt_core_sign(&p, sk, sm, &smlen, (const unsigned char *)msg, mlen)) { fprintf(stderr, "sign\n"); exit(1); }
        printf("Params = %u/%u/%u\n", h, d, w);
        hex("Seed", seed, 96);
        hex("PublicKey", pk, 64);
        printf("Index = %llu\n", idxs[k]);
        hex("Msg", (const unsigned char *)msg, mlen);
        hex("Signature", sm, p.sig_bytes);
        printf("\n");
        free(sm);
    }
    free(sk);
}

int main(void) {
    const unsigned long long a[] = {0, 1, 3, 4, 5, 14};
    const unsigned long long b[] = {0, 4, 16, 62};
    const unsigned long long c[] = {0, 5};
    run(4, 2, 16, a, 6);
    run(6, 3, 4, b, 4);
    run(3, 1, 16, c, 2);
    return 0;
}
