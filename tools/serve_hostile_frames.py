"""Hostile frames against a running ``trustlab serve``, from outside, on both ports.

Why: the in-process proxy fuzz (tests/tpm2/test_fuzz_proxy.py, benchmarks/bench_tpm2.py) drives the
TPM 2.0 TimingProxy; this drives a whole serve process (TPM 2.0 or TPM 1.2 profile) over TCP, as a
hostile client would: mutated and truncated command frames, lying size fields, MS-simulator framing,
a bad frame followed by a good one on the same connection, half-closed streams, control-port junk,
and one half-frame connection held open throughout. Every 20 cases a valid GetRandom on a fresh
connection must be answered (rc 0) and the serve process must still be alive.

    trustlab serve --profile nuvoton-npct750-wolftpm --port P --virtual &
    python tools/serve_hostile_frames.py --port P --family tpm2 --cases 2000 --pid $!

Exit status 1 when a health check failed, serve died, or (TPM 2.0) a bad frame threw the next good
one out of step. A TPM 1.2 serve hands the engine everything that has arrived as one command, as
swtpm does, so frames coalesced in one segment are not expected to stay in step there.

--pqc (TPM 2.0 Library 1.85 profile, e.g. sealsq-qvault-pqc-tpm-wolftpm; run with PYTHONPATH=src): first
creates real PQC objects over one connection (ML-DSA-65 and ML-KEM-768 primaries with passwords, an open
signing sequence, a completed one, saved contexts, a Create'd child, another client's key), then sends
mutated PQC frames: on that connection with an honest header size (bit flips, TPM2B size lies, truncation,
oversized parameters, lying authorizationSize and session sizes, foreign/stale handles, parameter sets out
of range, mutated context blobs) - each must be answered by exactly one well-formed response, the
connection staying in step - and lying-size frames on fresh connections. Every 20 cases a GetRandom on a
fresh connection and a PQC operation on the created keys (a SignDigest checked with cryptography, an
Encapsulate/Decapsulate pair) must succeed. Objects (GetCapability handles), serve's RSS and open files
are compared before and after; --serve-log FILE is scanned for tracebacks. Serve's control port is left
alone in this mode (a power cycle would rightly flush the objects), so run no other fuzzer against it.

    trustlab serve --profile sealsq-qvault-pqc-tpm-wolftpm --port P --virtual [--no-rm] 2>serve.err &
    PYTHONPATH=src python tools/serve_hostile_frames.py --pqc --port P --cases 5000 --pid $! --serve-log serve.err
"""
import argparse, collections, os, random, socket, struct, sys, time

_ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_ap.add_argument("--port", type=int, required=True, help="serve's data port P (control is P+1)")
_ap.add_argument("--family", choices=("tpm2", "tpm12"), default=None, help="required without --pqc")
_ap.add_argument("--pqc", action="store_true", help="TPM 2.0 Library 1.85 PQC frames against created PQC objects")
_ap.add_argument("--serve-log", default=None, help="serve's stderr file, scanned for tracebacks at the end")
_ap.add_argument("--cases", type=int, default=1500)
_ap.add_argument("--seed", type=int, default=1)
_ap.add_argument("--pid", type=int, default=None, help="serve's pid, to check it stays alive")
_args = _ap.parse_args()
if _args.pqc: _args.family = "tpm2"
if _args.family is None: _ap.error("--family is required (or --pqc)")
PORT = _args.port; FAM = _args.family; N = _args.cases; rng = random.Random(_args.seed); PID = _args.pid


def frame(tag, cc, body=b""):
    return struct.pack(">HII", tag, 10 + len(body), cc) + body


if FAM == "tpm2":
    VALID = [
        frame(0x8001, 0x17B, struct.pack(">H", 16)),                                   # GetRandom
        frame(0x8001, 0x17A, struct.pack(">III", 6, 0x100, 8)),                         # GetCapability props
        frame(0x8001, 0x17E, struct.pack(">IHB3s", 1, 0x000B, 3, b"\xff\xff\xff")),    # PCR_Read sha256
        frame(0x8001, 0x181),                                                           # ReadClock
        frame(0x8001, 0x143, b"\x00"),                                                  # SelfTest
        frame(0x8001, 0x176, struct.pack(">IIH16sHBHH", 0x40000007, 0x40000007, 16, os.urandom(16), 0, 0x01, 0x0010, 0x000B)),  # StartAuthSession
        frame(0x8001, 0x165, struct.pack(">I", 0x80000000)),                            # FlushContext
        frame(0x8001, 0x173, struct.pack(">I", 0x81000001)),                            # ReadPublic
        frame(0x8002, 0x182, struct.pack(">I", 0x40000007)),                            # Extend-ish junk tag
    ]
    HEALTH = frame(0x8001, 0x17B, struct.pack(">H", 8)); OKTAGS = (0x8001, 0x8002)
    TAGS = [0x8001, 0x8002, 0x00C1, 0x0000, 0xFFFF, 0x80FF]
else:
    VALID = [
        frame(0x00C1, 0x46, struct.pack(">I", 16)),                    # GetRandom
        frame(0x00C1, 0x15, struct.pack(">I", 0)),                     # PCRRead 0
        frame(0x00C1, 0x65, struct.pack(">II", 5, 4) + struct.pack(">I", 0x101)),  # GetCapability
        frame(0x00C1, 0x50, b""),                                      # SelfTestFull
        frame(0x00C1, 0x0A, b""),                                      # OIAP
        frame(0x00C1, 0xBA, struct.pack(">II", 0x02000000, 1)),        # FlushSpecific
        frame(0x00C1, 0x7C, struct.pack(">I", 20) + b"\x00" * 20),     # ReadPubek
        frame(0x00C2, 0x14, struct.pack(">I", 10) + b"\x11" * 20),     # Extend w/ wrong tag
        frame(0x00C1, 0xDC, struct.pack(">I", 0x40000000)),            # CreateCounter-ish junk
    ]
    HEALTH = frame(0x00C1, 0x46, struct.pack(">I", 8)); OKTAGS = (0x00C4,)
    TAGS = [0x00C1, 0x00C2, 0x00C3, 0x8001, 0x0000, 0xFFFF]


def mutate(b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.4 and b: b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.55: b += os.urandom(rng.randint(1, 40))
        elif op < 0.7 and len(b) > 1: del b[rng.randrange(len(b)):]
        elif op < 0.85 and len(b) >= 10: b[6:10] = struct.pack(">I", rng.choice([0, 1, 0x17B, 0x46, 0x20000000, 0xFFFFFFFF, rng.getrandbits(32)]))
        elif len(b) >= 6: b[2:6] = struct.pack(">I", rng.choice([0, 5, 9, 10, len(b), len(b) + 1, len(b) - 1, 4096, 4097, 8193, 65536, 65537, 0x7FFFFFFF, 0xFFFFFFFF]))
    return bytes(b)


def fix_size(b):
    return b[:2] + struct.pack(">I", len(b)) + b[6:] if len(b) >= 6 else b


def gen():
    r = rng.random()
    if r < 0.30: return "mut", mutate(rng.choice(VALID)), False
    if r < 0.45: return "mutfix", fix_size(mutate(rng.choice(VALID))), False
    if r < 0.55: return "random", os.urandom(rng.randint(1, 200)), False
    if r < 0.62:
        n = rng.choice([0, 1, 5, 9, 4096, 4097, 5000, 8192, 8193, 60000, 65536, 65537, 1 << 20, 0xFFFFFFFF])
        body = os.urandom(min(max(n - 10, 0), rng.choice([0, 16, 2000, 70000])))
        return "size", struct.pack(">HII", rng.choice(TAGS), n, rng.getrandbits(32)) + body, False
    if r < 0.70: return "pipelined", b"".join(rng.choice(VALID) for _ in range(rng.randint(2, 6))) + mutate(rng.choice(VALID)), False
    if r < 0.80:  # mssim framing on the data port
        cmd = mutate(rng.choice(VALID)) if rng.random() < .7 else rng.choice(VALID)
        return "mssim", struct.pack(">IBI", rng.choice([8, 8, 8, 1, 2, 15, 20, 21, 99, 0xFFFFFFFF]), rng.randrange(256),
                                    rng.choice([len(cmd), len(cmd) + 5, 0, 0xFFFFFFFF])) + cmd, False
    if r < 0.84:  # a self-consistent bad frame then a valid one on the same connection: must stay in step
        junk = fix_size(mutate(rng.choice(VALID))) if rng.random() < .6 else struct.pack(">HII", rng.choice(TAGS), 5000, 0x17B) + os.urandom(4990)
        if len(junk) < 10: junk = struct.pack(">HII", rng.choice(TAGS), 10, rng.getrandbits(32))
        return "instep", junk + HEALTH, False
    if r < 0.88: return "halfclose", rng.choice(VALID)[: rng.randint(1, 12)], True
    return "valid", rng.choice(VALID), False


def ctl_gen():
    r = rng.random()
    code = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 19, 255, 0xFFFFFFFF])
    if r < 0.5: return struct.pack(">I", code) + os.urandom(rng.choice([0, 1, 3, 4, 8, 100]))
    if r < 0.7: return struct.pack(">I", rng.choice([1, 2, 15, 17, 18, 8, 20, 21, 11, 12])) + os.urandom(rng.randint(0, 20))  # mssim platform
    return os.urandom(rng.randint(1, 64))


def complete(data, port, frames=1):
    """A whole raw response (data port) or mssim reply (length + response + 4-byte ack)."""
    if port != PORT or len(data) < 6: return False
    if data[0] in (0x80, 0x00) and data[1] in (0x01, 0x02, 0xC4, 0xC5, 0xC6):
        n = struct.unpack(">I", data[2:6])[0]
        if frames > 1: return len(data) >= n and complete(data[n:], port, frames - 1)
        return len(data) >= n
    n = struct.unpack(">I", data[:4])[0]
    return len(data) >= 4 + n + 4


def exchange(payload, port, halfclose=False, wait=2.0, frames=1):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(payload)
        if halfclose: s.shutdown(socket.SHUT_WR)
        s.settimeout(wait); data = b""; t0 = time.time()
        while time.time() - t0 < wait:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return "silent", data
            except ConnectionResetError:
                return "reset", data
            if not chunk: return "closed", data
            data += chunk
            if complete(data, port, frames): return "response", data
        return "silent", data
    except (BrokenPipeError, ConnectionResetError):
        return "reset", b""
    finally:
        s.close()


def healthy():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    try:
        s.sendall(HEALTH); data = b""; t0 = time.time()
        while len(data) < 10 or len(data) < struct.unpack(">I", data[2:6])[0]:
            c = s.recv(4096)
            if not c: break
            data += c
        tag, size, rc = struct.unpack(">HII", data[:10])
        return tag in OKTAGS and rc == 0 and size == len(data), time.time() - t0
    except Exception as e:
        return False, repr(e)
    finally:
        s.close()


def alive():
    if PID is None: return True
    try:
        os.kill(PID, 0); return True
    except OSError:
        return False


if _args.pqc:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from serve_hostile_pqc import run_pqc
    sys.exit(run_pqc(PORT, N, rng, PID, _args.serve_log, exchange, healthy, alive, mutate))

cnt = collections.Counter(); bad = []; resp_rc = collections.Counter(); t0 = time.time()
stall = socket.create_connection(("127.0.0.1", PORT)); stall.sendall(VALID[0][:7])  # half a frame, held open
for i in range(N):
    ctl = rng.random() < 0.15
    if ctl:
        kind, payload, hc = "ctl", ctl_gen(), rng.random() < 0.3
        out, data = exchange(payload, PORT + 1, hc, wait=1.0)
    else:
        kind, payload, hc = gen()
        out, data = exchange(payload, PORT, hc, frames=2 if kind == "instep" else 1)
        if kind == "instep" and FAM == "tpm2" and struct.unpack(">H", payload[:2])[0] in OKTAGS:
            # a frame with a TPM 2.0 tag and an honest size: the next frame must still be answered
            # (an unframeable tag is answered TPM_RC_BAD_TAG and the stream closed, by design)
            n = struct.unpack(">I", data[2:6])[0] if len(data) >= 6 else 0
            last = data[n:]
            if not (len(last) >= 10 and struct.unpack(">HII", last[:10])[2] == 0 and struct.unpack(">HII", last[:10])[0] in OKTAGS):
                # a tag the server cannot frame (not a TPM tag) legitimately ends the stream
                cnt["instep:lost_step"] += 1
                bad.append(("instep", payload[:16].hex(), len(payload), out, data[:24].hex(), last[:12].hex()))
    cnt[f"{kind}:{out}"] += 1
    if not ctl and data and len(data) >= 10:
        tag, size, rc = struct.unpack(">HII", data[:10]); resp_rc[hex(rc)] += 1
        if tag not in OKTAGS and kind != "mssim": bad.append(("badtag", kind, payload[:40].hex(), data[:20].hex()))
    if out == "silent" and not ctl and len(payload) >= 10 and kind not in ("size", "mut", "halfclose", "mssim", "pipelined", "instep"):
        bad.append(("silent", kind, payload[:40].hex(), len(payload), data[:20].hex()))
    if i % 20 == 19 or i == N - 1:
        ok, dt = healthy()
        cnt["health_ok" if ok else "HEALTH_FAIL"] += 1
        if not ok: bad.append(("health", i, dt, kind, payload[:60].hex()))
        if not alive(): bad.append(("DEAD", i, kind, payload[:60].hex())); break
print(dict(sorted(cnt.items())), f"{time.time() - t0:.0f}s")
print("response codes:", dict(resp_rc.most_common(12)))
for b in bad[:20]: print(b)
stall.close()
sys.exit(1 if cnt["HEALTH_FAIL"] or cnt["instep:lost_step"] or any(b[0] == "DEAD" for b in bad) else 0)
