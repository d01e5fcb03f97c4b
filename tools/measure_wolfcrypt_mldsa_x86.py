#!/usr/bin/env python3
"""Measure ML-DSA (and ML-KEM) C implementations side by side on this x86-64 core, in TSC ticks.

Why: xu2025-x86 (G. Xu's thesis, AMD Ryzen 7 1700X) publishes ML-DSA timings of a wolfSSL build whose
ML-DSA code base matters to the PQC model's lineage factor (pqc_model/data/lineage.toml): wolfCrypt's own
ML-DSA (dilithium.c, WOLFSSL_WC_DILITHIUM) or PQClean's clean ML-DSA behind the same wc_dilithium_* API
(PQCLEAN_DILITHIUM in the thesis's fork). This tool builds each candidate with the thesis's flags (-O2 -g,
its RelWithDebInfo default, no -march) and times it on one pinned core with rdtsc, as the thesis's
server/src/bench_wolfcrypt.c does, so their ratios on one machine say which code the thesis ran and what
wolfCrypt's C costs against the reference on x86-64.

Candidates (each optional, given by the directory of a fetched source tree; nothing fetched is kept in the
repository):
  --wolfssl DIR [DIR ...]   wolfSSL source trees (wolfcrypt/src/dilithium.c or wc_mldsa.c, sha3.c, ...), built
                            with --user-settings (the thesis's server/config/user_settings.h) switched to
                            WOLFSSL_WC_DILITHIUM, once with its DEBUG_WOLFSSL and once without;
  --pqclean DIR             a PQClean checkout: crypto_sign/ml-dsa-{44,65,87}/clean and crypto_kem/ml-kem-*/clean
                            with common/fips202.c (the code the thesis's CMake build compiles);
  --dilithium DIR           a pq-crystals/dilithium checkout (ref/, FIPS 204 ML-DSA).

Timer: rdtsc around each call (TSC ticks, constant rate: not core cycles); the tool also times a chain of
dependent adds to report core cycles per TSC tick on this machine. Each operation: one warm-up call, --runs
timed calls (signing over --runs different messages: rejection sampling varies), the median; the whole
binary is run --repeats times and the median of the medians is reported.

Usage:
  tools/measure_wolfcrypt_mldsa_x86.py --build /work/build/me/mldsa \
      --user-settings /path/user_settings.h --wolfssl /path/wolfssl-5.8.4 \
      --pqclean /path/PQClean --dilithium /path/dilithium [--cpu 1] [--runs 301] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

OPT = ["-O2", "-g"]  # the thesis's RelWithDebInfo (server/CMakeLists.txt), no -march
LEVELS = {"ML-DSA-44": 2, "ML-DSA-65": 3, "ML-DSA-87": 5}
KEMS = ("ML-KEM-512", "ML-KEM-768", "ML-KEM-1024")

TSC_H = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static inline uint64_t rdtsc(void){uint64_t r;__asm__ volatile("rdtsc; shlq $32,%%rdx; orq %%rdx,%%rax":"=a"(r)::"%rdx");return r;}
static int cmpu(const void*a,const void*b){uint64_t x=*(const uint64_t*)a,y=*(const uint64_t*)b;return x<y?-1:x>y;}
static uint64_t *tt; static int NRUN;
static uint64_t med(void){qsort(tt,NRUN,sizeof tt[0],cmpu);return tt[NRUN/2];}
#define TIME(label, setup, call) do{ setup; call; \
  for(int i_=0;i_<NRUN;i_++){ setup; uint64_t a_=rdtsc(); call; tt[i_]=rdtsc()-a_; } \
  printf("%s %llu\n", label, (unsigned long long)med()); }while(0)
static void init_runs(int argc, char **argv){NRUN=argc>1?atoi(argv[1]):301; tt=malloc(sizeof(uint64_t)*NRUN);}
"""

CLOCK_C = TSC_H + r"""
/* core cycles per TSC tick: 2^20 dependent adds take 2^20 core cycles (one add a cycle on any x86-64 core); short
   enough (well under a scheduler tick) that a shared core rarely preempts it */
int main(int argc,char**argv){init_runs(argc,argv); uint64_t x=1;
  TIME("clock adds-2^20", (void)0, {uint64_t n=1ull<<20; __asm__ volatile("1: add $1,%0; dec %1; jnz 1b":"+r"(x),"+r"(n));});
  return (int)(x&0);}
"""

WOLFCRYPT_C = TSC_H + r"""
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/dilithium.h>
/* as xuganyu96/embedded-pqtls server/src/bench_wolfcrypt.c: init + set_level + make_key; sign_msg / verify_msg
   of a 48-byte message with the key's RNG */
static WC_RNG rng; static byte msg[48], sig[DILITHIUM_MAX_SIG_SIZE]; static word32 siglen;
int main(int argc,char**argv){init_runs(argc,argv); wc_InitRng(&rng);
  const char *name[3]={"ML-DSA-44","ML-DSA-65","ML-DSA-87"}; int lv[3]={2,3,5}; char lab[64];
  for(int j=0;j<3;j++){dilithium_key key, k2; int v=0, ret; word32 n;
    wc_dilithium_init(&key); wc_dilithium_set_level(&key,lv[j]);
    if(wc_dilithium_make_key(&key,&rng)) return 2;
    snprintf(lab,sizeof lab,"%s keygen",name[j]); wc_dilithium_init(&k2);
    TIME(lab, (wc_dilithium_free(&k2)), {wc_dilithium_init(&k2); wc_dilithium_set_level(&k2,lv[j]); if(wc_dilithium_make_key(&k2,&rng)) return 3;});
    snprintf(lab,sizeof lab,"%s sign",name[j]); int m=0;
    TIME(lab, (msg[0]=(byte)m, msg[1]=(byte)(m>>8), m++, n=sizeof sig), {ret=wc_dilithium_sign_msg(msg,sizeof msg,sig,&n,&key,&rng); if(ret) return 4;});
    siglen=n;
    snprintf(lab,sizeof lab,"%s verify",name[j]);
    TIME(lab, (v=0), {if(wc_dilithium_verify_msg(sig,siglen,msg,sizeof msg,&v,&key)||!v) return 5;});
    wc_dilithium_free(&key);}
  return 0;}
"""

PQCLEAN_C = TSC_H + r"""
#include "crypto_sign/ml-dsa-44/clean/api.h"
#include "crypto_sign/ml-dsa-65/clean/api.h"
#include "crypto_sign/ml-dsa-87/clean/api.h"
#include "crypto_kem/ml-kem-512/clean/api.h"
#include "crypto_kem/ml-kem-768/clean/api.h"
#include "crypto_kem/ml-kem-1024/clean/api.h"
static uint8_t pk[4096], sk[8192], sig[8192], msg[48], ct[2048], ss[32], ss2[32]; static size_t siglen;
#define DSA(NAME, P) do{ int m=0; \
  TIME(NAME " keygen", (void)0, {if(P##_crypto_sign_keypair(pk,sk)) return 2;}); \
  TIME(NAME " sign", (msg[0]=(uint8_t)m, msg[1]=(uint8_t)(m>>8), m++), {if(P##_crypto_sign_signature(sig,&siglen,msg,sizeof msg,sk)) return 3;}); \
  TIME(NAME " verify", (void)0, {if(P##_crypto_sign_verify(sig,siglen,msg,sizeof msg,pk)) return 4;}); }while(0)
#define KEM(NAME, P) do{ \
  TIME(NAME " keygen", (void)0, {if(P##_crypto_kem_keypair(pk,sk)) return 5;}); \
  TIME(NAME " encapsulate", (void)0, {if(P##_crypto_kem_enc(ct,ss,pk)) return 6;}); \
  TIME(NAME " decapsulate", (void)0, {if(P##_crypto_kem_dec(ss2,ct,sk)) return 7;}); \
  if(memcmp(ss,ss2,32)) return 8; }while(0)
int main(int argc,char**argv){init_runs(argc,argv);
  DSA("ML-DSA-44", PQCLEAN_MLDSA44_CLEAN); DSA("ML-DSA-65", PQCLEAN_MLDSA65_CLEAN); DSA("ML-DSA-87", PQCLEAN_MLDSA87_CLEAN);
  KEM("ML-KEM-512", PQCLEAN_MLKEM512_CLEAN); KEM("ML-KEM-768", PQCLEAN_MLKEM768_CLEAN); KEM("ML-KEM-1024", PQCLEAN_MLKEM1024_CLEAN);
  return 0;}
"""

REF_C = TSC_H + r"""
#include "sign.h"
#include "params.h"
static uint8_t pk[CRYPTO_PUBLICKEYBYTES], sk[CRYPTO_SECRETKEYBYTES], sig[CRYPTO_BYTES], msg[48]; static size_t siglen;
int main(int argc,char**argv){init_runs(argc,argv); int m=0; char lab[64];
  snprintf(lab,sizeof lab,"%s keygen",NAME); TIME(lab, (void)0, {if(crypto_sign_keypair(pk,sk)) return 2;});
  snprintf(lab,sizeof lab,"%s sign",NAME);
  TIME(lab, (msg[0]=(uint8_t)m, msg[1]=(uint8_t)(m>>8), m++), {if(crypto_sign_signature(sig,&siglen,msg,sizeof msg,NULL,0,sk)) return 3;});
  snprintf(lab,sizeof lab,"%s verify",NAME); TIME(lab, (void)0, {if(crypto_sign_verify(sig,siglen,msg,sizeof msg,NULL,0,pk)) return 4;});
  return 0;}
"""

WOLF_SOURCES = ("sha3", "sha", "sha256", "sha512", "random", "hash", "memory", "logging", "error", "wc_port")
FORK_ONLY = re.compile(r"^\s*#define\s+(PQCLEAN_\w+|HAVE_SPHINCS|HAVE_FALCON|HAVE_HQC|HAVE_OTMLKEM|WOLFSSL_HAVE_KEMTLS)\b.*$",
                       re.M)


def die(msg: str) -> None:
    sys.exit(f"measure_wolfcrypt_mldsa_x86: {msg}")


def run(cmd: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        die(f"{' '.join(cmd[:3])} ... failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout


def cc(args: list[str], out: Path, cwd: Path | None = None) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        run(["nice", "gcc", *OPT, *args, "-o", str(out)], cwd)
    return out


def thesis_settings(text: str, debug: bool) -> str:
    """The thesis's user_settings.h with wolfCrypt's own ML-DSA selected (its fork-only PQClean / KEMTLS switches
    removed: upstream wolfSSL has none of that code), DEBUG_WOLFSSL kept or dropped, and DER key encoding left out
    (WOLFSSL_DILITHIUM_NO_ASN1: no ASN.1 code is on the timed paths; it spares linking asn.c)."""
    text = FORK_ONLY.sub("", text)
    text = re.sub(r"^\s*#define\s+DEBUG_WOLFSSL\b.*$", "#define DEBUG_WOLFSSL" if debug else "", text, flags=re.M)
    extra = ("\n#ifndef WOLFSSL_WC_DILITHIUM\n#define WOLFSSL_WC_DILITHIUM\n#endif\n#define WOLFSSL_DILITHIUM_NO_ASN1\n"
             "#define WOLFSSL_MLDSA_NO_ASN1\n#define WOLFCRYPT_ONLY\n")
    end = text.rfind("#endif")
    return text[:end] + extra + text[end:]


def build_wolfssl(src: Path, settings: Path, build: Path, debug: bool) -> tuple[str, Path]:
    version = re.search(r'LIBWOLFSSL_VERSION_STRING\s+"([^"]+)"', (src / "wolfssl/version.h").read_text())
    tag = f"wolfcrypt-{version.group(1) if version else src.name}-{'debug' if debug else 'nodebug'}"
    out = build / tag
    out.mkdir(parents=True, exist_ok=True)
    (out / "user_settings.h").write_text(thesis_settings(settings.read_text(), debug))
    wc = src / "wolfcrypt/src"
    dsa = "wc_mldsa" if (wc / "wc_mldsa.c").exists() else "dilithium"
    flags = ["-DWOLFSSL_USER_SETTINGS", f"-I{out}", f"-I{src}"]
    objs = [str(cc([*flags, "-c", str(wc / f"{f}.c")], out / f"{f}.o")) for f in (dsa, *WOLF_SOURCES)
            if (wc / f"{f}.c").exists()]
    (out / "bench.c").write_text(WOLFCRYPT_C)
    return tag, cc([*flags, str(out / "bench.c"), *objs, "-lm"], out / "bench")


def build_pqclean(src: Path, build: Path) -> tuple[str, Path]:
    out = build / "pqclean"
    out.mkdir(parents=True, exist_ok=True)
    objs = [str(cc([f"-I{src / 'common'}", "-c", str(src / "common" / f)], out / f"common-{Path(f).stem}.o"))
            for f in ("fips202.c", "randombytes.c")]
    for kind, names in (("crypto_sign", ("ml-dsa-44", "ml-dsa-65", "ml-dsa-87")), ("crypto_kem", ("ml-kem-512", "ml-kem-768", "ml-kem-1024"))):
        for name in names:
            d = src / kind / name / "clean"
            objs += [str(cc([f"-I{src / 'common'}", f"-I{d}", "-c", str(c)], out / f"{name}-{c.stem}.o"))
                     for c in sorted(d.glob("*.c"))]
    (out / "bench.c").write_text(PQCLEAN_C)
    return "pqclean-clean", cc([f"-I{src}", f"-I{src / 'common'}", str(out / "bench.c"), *objs], out / "bench")


def build_ref(src: Path, build: Path) -> list[tuple[str, Path]]:
    ref = src / "ref"
    files = [str(ref / f) for f in ("sign.c", "packing.c", "polyvec.c", "poly.c", "ntt.c", "reduce.c", "rounding.c",
                                   "fips202.c", "symmetric-shake.c", "randombytes.c")]
    out = build / "dilithium-ref"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.c").write_text(REF_C)
    return [("pq-crystals-ref", cc([f"-DDILITHIUM_MODE={mode}", f'-DNAME="{name}"', f"-I{ref}", str(out / "bench.c"),
                                    *files], out / f"bench{mode}"))
            for name, mode in LEVELS.items()]


def measure(binaries: list[tuple[str, Path]], cpu: int, runs: int, repeats: int) -> dict:
    """{implementation: {"ALG op": median over repeats of the per-run medians}}, repeats interleaved."""
    raw: dict[str, dict[str, list[int]]] = {}
    for _ in range(repeats):
        for impl, exe in binaries:
            text = run(["taskset", "-c", str(cpu), "nice", "-n", "5", str(exe), str(runs)])
            for line in text.splitlines():
                *key, value = line.split()
                raw.setdefault(impl, {}).setdefault(" ".join(key), []).append(int(value))
    return {impl: {k: statistics.median(v) for k, v in ops.items()} for impl, ops in raw.items()}


def report(result: dict) -> str:
    lines = [f"TSC ticks per 2^20 dependent adds (= 2^20 core cycles): {result['clock']:.0f} -> "
             f"{(1 << 20) / result['clock']:.3f} core cycles per TSC tick", ""]
    impls = [i for i in result["medians"] if i != "clock"]
    ops = sorted({k for i in impls for k in result["medians"][i]})
    lines.append(f"{'operation':22s}" + "".join(f"{i:>28s}" for i in impls))
    for op in ops:
        lines.append(f"{op:22s}" + "".join(f"{result['medians'][i].get(op, float('nan')):>28,.0f}" for i in impls))
    base = "pqclean-clean" if "pqclean-clean" in impls else "pq-crystals-ref"
    if base in impls:
        lines += ["", f"ratio to {base} (same core, same flags):"]
        for op in ops:
            if op.startswith("ML-DSA") and op in result["medians"][base]:
                lines.append(f"{op:22s}" + "".join(
                    f"{result['medians'][i][op] / result['medians'][base][op]:>28.3f}" for i in impls if op in result["medians"][i]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--build", type=Path, required=True, help="build directory (outside the repository)")
    ap.add_argument("--user-settings", type=Path, help="the thesis's server/config/user_settings.h (for --wolfssl)")
    ap.add_argument("--wolfssl", type=Path, nargs="*", default=[], help="wolfSSL source trees")
    ap.add_argument("--pqclean", type=Path, help="PQClean checkout")
    ap.add_argument("--dilithium", type=Path, help="pq-crystals/dilithium checkout")
    ap.add_argument("--cpu", type=int, default=1, help="core to pin to (taskset)")
    ap.add_argument("--runs", type=int, default=301, help="timed calls per operation and run")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each binary (interleaved)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args(argv)
    if a.wolfssl and not a.user_settings:
        die("--wolfssl needs --user-settings (the thesis's server/config/user_settings.h)")
    for d in [*a.wolfssl, a.pqclean, a.dilithium, a.user_settings]:
        if d is not None and not d.exists():
            die(f"{d}: no such file or directory")
    for src in a.wolfssl:
        if not (src / "wolfssl/version.h").exists() or not (src / "wolfcrypt/src/sha3.c").exists():
            die(f"{src}: not a wolfSSL source tree (no wolfssl/version.h or wolfcrypt/src/sha3.c)")
    if a.pqclean and not (a.pqclean / "crypto_sign/ml-dsa-44/clean").is_dir():
        die(f"{a.pqclean}: not a PQClean checkout (no crypto_sign/ml-dsa-44/clean)")
    if a.dilithium and not (a.dilithium / "ref/sign.c").exists():
        die(f"{a.dilithium}: not a pq-crystals/dilithium checkout (no ref/sign.c)")
    if not shutil.which("gcc") or not shutil.which("taskset"):
        die("needs gcc and taskset")
    a.build.mkdir(parents=True, exist_ok=True)
    binaries = [(f"{tag}", exe) for src in a.wolfssl for debug in (True, False)
                for tag, exe in [build_wolfssl(src, a.user_settings, a.build, debug)]]
    if a.pqclean:
        binaries.append(build_pqclean(a.pqclean, a.build))
    if a.dilithium:
        binaries += build_ref(a.dilithium, a.build)
    if not binaries:
        die("nothing to measure: give --wolfssl, --pqclean and/or --dilithium")
    (a.build / "clock.c").write_text(CLOCK_C)
    clock = cc([str(a.build / "clock.c")], a.build / "clock")
    medians = measure([("clock", clock), *binaries], a.cpu, a.runs, a.repeats)
    result = {"timer": "rdtsc (TSC ticks)", "flags": " ".join(OPT), "cpu": a.cpu, "runs": a.runs,
              "repeats": a.repeats, "clock": medians.pop("clock")["clock adds-2^20"],
              "cpu_model": next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                                 if ln.startswith("model name")), "unknown"),
              "gcc": run(["gcc", "--version"]).splitlines()[0], "medians": medians}
    print(json.dumps(result, indent=1) if a.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
