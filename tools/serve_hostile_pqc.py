"""The --pqc mode of tools/serve_hostile_frames.py: hostile TPM 2.0 Library 1.85 PQC frames against
objects that exist (see that tool's docstring). Kept apart because it needs trustlab's PQC client and
structures (PYTHONPATH=src), which the classical modes do not.
"""
import collections, os, socket, struct, subprocess, sys, time

from cryptography.exceptions import InvalidSignature

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import (DEFAULT_KEM_ATTRS, DEFAULT_SIGN_ATTRS, PqcClient, SocketTransport,
                                              TpmResponseError, external_mu, public_key, split_response, template)

HANDLES = {0x1A6: 1, 0x1A5: 1, 0x1AA: 1, 0x1A9: 1, 0x15C: 1, 0x1A4: 2, 0x1A3: 2, 0x1A7: 1, 0x1A8: 1,
           0x131: 1, 0x153: 1, 0x157: 1, 0x162: 1, 0x161: 0, 0x173: 1, 0x17A: 0}
"""Command handles per command code (where the authorization area starts)."""
CREATES = {0x131, 0x157, 0x161, 0x1AA, 0x1A9}  # answer rc 0 with a new handle, flushed by the fuzzer
SIZES = [0, 1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 1024, 1025, 1088, 1568, 1569, 2592, 2593, 4627, 4628,
         0x7FFF, 0x8000, 0xFFFE, 0xFFFF]
PSETS = [0, 1, 2, 3, 4, 5, 0x10, 0x7FFF, 0xFFFF]
PW = {"dsa": b"dsa-pw", "kem": b"kem-pw", "seq": b"seq-pw", "da": b"da-pw"}


class Lost(Exception):
    """The owner connection is out of step or gone: a finding; the objects are rebuilt on a new one."""


class Owner:
    """One connection holding real PQC objects; frames sent on it must stay in step."""

    def __init__(self, port, rng):
        self.port, self.rng = port, rng
        self.t = SocketTransport("127.0.0.1", port, timeout=30)
        self.c = PqcClient(self.t)
        c = self.c
        self.dsa = c.create_primary("ML-DSA-65", auth=PW["dsa"], attributes=DEFAULT_SIGN_ATTRS | S.NO_DA)
        self.kem = c.create_primary("ML-KEM-768", auth=PW["kem"], attributes=DEFAULT_KEM_ATTRS | S.NO_DA)
        self.da = c.create_primary("ML-DSA-44", auth=PW["da"])  # DA-protected: fuzzed auths reach the DA logic
        self.storage = c.create_storage_primary()
        self.child_priv, self.child_pub = c.create(self.storage, "ML-DSA-44", auth=b"child")
        self.mu = external_mu(self.dsa.public.unique, b"hostile")
        self.sig = c.sign_digest(self.dsa.handle, self.mu, auth=PW["dsa"])
        self.ss, self.ct = c.encapsulate(self.kem.handle)
        self.ctx_dsa = c.context_save(self.dsa.handle)
        self.ctx_kem = c.context_save(self.kem.handle)
        self.seq = self.start_seq()
        done = self.start_seq()
        c.call("complete", S.frame(0x1A4, [done, self.dsa.handle], S.tpm2b(b"x"),
                                   [S.password(PW["seq"]), S.password(PW["dsa"])]))
        self.stale = done  # a sequence fed after Complete
        try:
            self.ctx_seq = c.context_save(self.seq)
        except TpmResponseError:
            self.ctx_seq = self.ctx_dsa
        self.other_client = None

    def start_seq(self):
        r = self.c.call("start", S.frame(0x1AA, [self.dsa.handle], S.tpm2b(PW["seq"]) + S.tpm2b(b"")))
        return split_response(r, 1)[0][0]

    def send(self, command, wait=20.0):
        """One frame with an honest size: exactly one well-formed response, or Lost."""
        s = self.t.sock
        s.settimeout(wait)
        try:
            s.sendall(command)
            data = b""
            while len(data) < 10:
                chunk = s.recv(65536)
                if not chunk: raise Lost("closed")
                data += chunk
            n = struct.unpack(">I", data[2:6])[0]
            if not 10 <= n <= 65536: raise Lost(f"response size field {n}")
            while len(data) < n:
                chunk = s.recv(65536)
                if not chunk: raise Lost("closed mid-response")
                data += chunk
            if len(data) != n: raise Lost(f"{len(data) - n} bytes beyond the response")
        except socket.timeout:
            raise Lost("silent") from None
        except OSError as e:
            raise Lost(repr(e)) from None
        if struct.unpack(">H", data[:2])[0] not in (0x8001, 0x8002): raise Lost(f"tag {data[:2].hex()}")
        return data

    def handles(self):
        """The transient handles this connection's client sees (its own under the resource manager)."""
        r = self.send(S.frame(0x17A, [], S.u32(1) + S.u32(0x80000000) + S.u32(64)))
        if S.response_code(r) != 0: return set()
        (n,) = struct.unpack(">I", r[15:19])
        return set(struct.unpack(f">{n}I", r[19:19 + 4 * n]))

    def close(self):
        self.t.close()


def valid_frames(o, other_handle):
    """Well-formed PQC frames on o's objects (some refused by design: wrong auths, foreign handles)."""
    rng = o.rng; d, k = o.dsa.handle, o.kem.handle
    ctx = lambda: rng.choice([b"", b"c" * rng.choice([1, 255, 256])])
    pset = lambda: rng.choice(PSETS)
    tmpl = lambda: rng.choice([template("ML-DSA-44"), template("ML-KEM-1024"), template("ML-DSA-65", hash_alg=0x000B),
                               S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, DEFAULT_SIGN_ATTRS, b"", pset(), True),
                               S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, DEFAULT_KEM_ATTRS, b"", pset()),
                               S.Public(S.TPM_ALG_HASH_MLDSA, S.TPM_ALG_SHA256, DEFAULT_SIGN_ATTRS, b"", pset(),
                                        hash_alg=rng.choice([0x000B, 0x0010, 0x0004, 0xFFFF]))])
    seq = rng.choice([o.seq, o.seq, o.stale, other_handle])
    return [
        S.frame(0x1A6, [d], S.tpm2b(ctx()) + S.tpm2b(o.mu) + S.null_hashcheck_ticket(), [S.password(PW["dsa"])]),
        S.frame(0x1A6, [o.da.handle], S.tpm2b(b"") + S.tpm2b(o.mu) + S.null_hashcheck_ticket(), [S.password(PW["da"])]),
        S.frame(0x1A5, [d], S.tpm2b(b"") + S.tpm2b(o.mu) + S.signature(o.dsa.public, o.sig)),
        S.frame(0x1AA, [d], S.tpm2b(b"a") + S.tpm2b(ctx())),
        S.frame(0x1A9, [d], S.tpm2b(b"a") + S.tpm2b(b"") + S.tpm2b(ctx())),
        S.frame(0x15C, [seq], S.tpm2b(os.urandom(rng.choice([0, 1, 64, 1024]))), [S.password(PW["seq"])]),
        S.frame(0x1A4, [seq, d], S.tpm2b(b"m"), [S.password(PW["seq"]), S.password(PW["dsa"])]),
        S.frame(0x1A3, [seq, d], S.signature(o.dsa.public, o.sig), [S.password(PW["seq"])]),
        S.frame(0x1A7, [k], b""),
        S.frame(0x1A8, [k], S.tpm2b(o.ct), [S.password(PW["kem"])]),
        S.frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create(b"p") + S.tpm2b(tmpl().marshal()) + S.tpm2b(b"") + S.u32(0),
                [S.password()]),
        S.frame(0x153, [o.storage], S.sensitive_create(b"p") + S.tpm2b(tmpl().marshal()) + S.tpm2b(b"") + S.u32(0),
                [S.password()]),
        S.frame(0x157, [o.storage], S.tpm2b(o.child_priv) + S.tpm2b(o.child_pub), [S.password()]),
        S.frame(0x162, [rng.choice([d, k, o.seq, o.stale])], b""),
        S.frame(0x161, [], rng.choice([o.ctx_dsa, o.ctx_kem, o.ctx_seq])),
        S.frame(0x173, [rng.choice([d, k, other_handle])], b""),
    ]


def honest_mutation(f, o, other_handle):
    """A mutated frame whose header size is its length again (so the connection must stay in step)."""
    rng = o.rng; b = bytearray(f)
    cc = struct.unpack(">I", b[6:10])[0]; nh = HANDLES.get(cc, 0); hend = 10 + 4 * nh
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.2:  # bit flips past the header
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(10, len(b)) if len(b) > 10 else None
                if i is not None: b[i] ^= 1 << rng.randrange(8)
        elif op < 0.4 and len(b) > hend + 2:  # a TPM2B (or any u16) size lie
            i = rng.randrange(hend, len(b) - 1)
            b[i:i + 2] = struct.pack(">H", rng.choice(SIZES + [len(b) - i - 2, len(b) - i - 1, len(b) - i - 3]) & 0xFFFF)
        elif op < 0.5 and len(b) > 10:
            del b[rng.randrange(10, len(b)):]
        elif op < 0.6:
            b += os.urandom(rng.choice([1, 2, 100, 1000, 3000, 5000]))
        elif op < 0.72 and b[:2] == b"\x80\x02" and len(b) >= hend + 4:  # authorizationSize / session size lies
            if rng.random() < 0.5:
                real = struct.unpack(">I", b[hend:hend + 4])[0]
                b[hend:hend + 4] = struct.pack(">I", rng.choice([0, 1, 8, 9, real - 1, real + 1, real + 9, len(b), 0xFFFFFFFF]) & 0xFFFFFFFF)
            elif len(b) >= hend + 4 + 9:
                j = hend + 4 + 4 + rng.choice([0, 3])  # nonceSize or hmacSize of the first session
                b[j:j + 2] = struct.pack(">H", rng.choice([1, 16, 64, 65, 0xFFFF]))
            else:
                b[hend + 4:hend + 8] = struct.pack(">I", rng.choice([0x02000000, 0x03000000, 0x40000007, 0]))
        elif op < 0.85 and nh:  # foreign, stale, made-up handles
            i = 10 + 4 * rng.randrange(nh)
            b[i:i + 4] = struct.pack(">I", rng.choice([other_handle, o.stale, o.seq, o.kem.handle, o.dsa.handle,
                                                       o.storage, 0x80000000 + rng.randrange(16), 0x80FFFFFF,
                                                       0x81000001, 0x40000007, 0x40000009, 0x02000000,
                                                       0xFFFFFFFF, rng.getrandbits(32)]))
        elif op < 0.92:  # tag swap
            b[0:2] = b"\x80\x01" if b[:2] == b"\x80\x02" else b"\x80\x02"
        elif len(b) > 14:  # random value over a u32 in the parameters
            i = rng.randrange(10, len(b) - 3)
            b[i:i + 4] = struct.pack(">I", rng.choice([0, 1, 0xFFFF, 0x10000, 0xFFFFFFFF, rng.getrandbits(32)]))
    return bytes(b[:2] + struct.pack(">I", len(b)) + b[6:])


def mutated_context(o):
    """A ContextLoad of a mutated saved context (honest frame size)."""
    rng = o.rng; blob = bytearray(rng.choice([o.ctx_dsa, o.ctx_kem, o.ctx_seq]))
    op = rng.random()
    if op < 0.4:
        for _ in range(rng.randint(1, 3)): blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
    elif op < 0.6: blob[16:18] = struct.pack(">H", rng.choice(SIZES))
    elif op < 0.75: blob[8:16] = struct.pack(">II", rng.choice([0x80000000, 0x80000001, 0x80000002, 0x80FFFFFF, 0x02000000, 0x40000001]),
                                            rng.choice([0x40000001, 0x4000000B, 0x4000000C, 0x40000007, 0]))
    elif op < 0.85: blob[0:8] = struct.pack(">Q", rng.getrandbits(64))
    elif op < 0.93: del blob[rng.randrange(len(blob)):]
    else: blob += os.urandom(rng.choice([1, 100, 5000]))
    return S.frame(0x161, [], bytes(blob))


def objects(port):
    """Transient objects, loaded and saved sessions a fresh connection sees (GetCapability TPM_CAP_HANDLES)."""
    out = []
    t = SocketTransport("127.0.0.1", port, timeout=30)
    try:
        for first in (0x80000000, 0x02000000, 0x03000000):
            r = t.transact(S.frame(0x17A, [], S.u32(1) + S.u32(first) + S.u32(64)))
            out.append(struct.unpack(">I", r[15:19])[0] if S.response_code(r) == 0 else f"rc {S.response_code(r):#x}")
    finally:
        t.close()
    return tuple(out)


OTHER = """
import sys
from trustlab.devices.tpm2.pqc.client import PqcClient, SocketTransport
from trustlab.devices.tpm2.pqc import structures as S
c = PqcClient(SocketTransport("127.0.0.1", int(sys.argv[1]), timeout=30))
if sys.argv[2] == "key":
    from trustlab.devices.tpm2.pqc.client import DEFAULT_SIGN_ATTRS
    k = c.create_primary("ML-DSA-44", auth=b"other", attributes=DEFAULT_SIGN_ATTRS | S.NO_DA)  # our DA key may lock out
    print(hex(k.handle), flush=True); sys.stdin.read()
    from trustlab.devices.tpm2.pqc.client import external_mu, public_key
    mu = external_mu(k.public.unique, b"still mine")
    c.verify_digest_signature(k, mu, c.sign_digest(k.handle, mu, auth=b"other"))
    c.flush(k.handle)  # without the resource manager (--no-rm) nobody else would
    print("intact", flush=True)
else:
    import struct
    out = []
    for first in (0x80000000, 0x02000000, 0x03000000):
        r = c.transport.transact(S.frame(0x17A, [], S.u32(1) + S.u32(first) + S.u32(64)))
        out.append(struct.unpack(">I", r[15:19])[0] if S.response_code(r) == 0 else -S.response_code(r))
    print(*out)
"""
"""Another client (a process of its own: serve's resource manager tells clients apart by process)."""


def other_client(port):
    p = subprocess.Popen([sys.executable, "-c", OTHER, str(port), "key"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    return p, int(p.stdout.readline(), 16)


def objects_elsewhere(port):
    """What another process sees (under the resource manager: none of ours)."""
    out = subprocess.run([sys.executable, "-c", OTHER, str(port), "count"], capture_output=True, text=True, timeout=60)
    return tuple(int(x) for x in out.stdout.split()) if out.returncode == 0 else out.stderr.strip()[-200:]


def proc(pid):
    if pid is None: return None
    try:
        rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def pqc_health(o):
    """A SignDigest the TPM verifies, a signing sequence checked with cryptography, and an
    Encapsulate/Decapsulate pair on o's keys."""
    mu = external_mu(o.dsa.public.unique, os.urandom(8))
    sig = o.c.sign_digest(o.dsa.handle, mu, auth=PW["dsa"])
    ok = o.c.verify_digest_signature(o.dsa, mu, sig) is not None
    message = os.urandom(1500)
    try:
        public_key(o.dsa.public).verify(o.c.sign_sequence(o.dsa.handle, message, auth=PW["dsa"]), message)
    except InvalidSignature:
        return False
    ss, ct = o.c.encapsulate(o.kem.handle)
    return ok and o.c.decapsulate(o.kem.handle, ct, auth=PW["kem"]) == ss


def run_pqc(port, n, rng, pid, serve_log, exchange, healthy, alive, mutate):
    cnt = collections.Counter(); bad = []; rcs = collections.Counter(); t0 = time.time()
    base = objects(port); base_else = objects_elsewhere(port); proc0 = proc(pid)
    other, other_handle = other_client(port)  # another client's key (its handle number may equal one of ours)
    o = Owner(port, rng); o.rng = rng
    with_objects = objects(port); with_else = objects_elsewhere(port)
    for i in range(n):
        r = rng.random()
        try:
            if r < 0.62:
                kind = "honest"
                f = honest_mutation(rng.choice(valid_frames(o, other_handle)), o, other_handle)
            elif r < 0.72:
                kind = "context"; f = mutated_context(o)
            elif r < 0.80:
                kind = "valid"; f = rng.choice(valid_frames(o, other_handle))
            else:
                kind = None
            if kind is not None:
                before = o.handles()
                data = o.send(f)
                rc = struct.unpack(">I", data[6:10])[0]; cc = struct.unpack(">I", f[6:10])[0]
                rcs[hex(rc)] += 1; cnt[f"{kind}:{'ok' if rc == 0 else 'refused'}"] += 1
                if rc == 0 and cc in CREATES and len(data) >= 14:
                    o.send(S.frame(0x165, [], data[10:14]))
                if o.seq not in o.handles():
                    o.seq = o.start_seq()  # the open sequence was completed: start another
                grown = o.handles() - before - {o.seq}
                if grown:  # an object the command did not hand out (or a refused one that kept one)
                    bad.append(("GREW", kind, hex(rc), [hex(h) for h in grown], f[:64].hex(), len(f))); cnt["GREW"] += 1
                    for h in grown: o.send(S.frame(0x165, [], S.u32(h)))
            else:  # lying sizes / raw mutations of PQC frames on a fresh connection (the owner's handles are foreign)
                kind = "fresh"
                f = mutate(rng.choice(valid_frames(o, other_handle)))
                out, data = exchange(f, port, wait=1.0)
                cnt[f"fresh:{out}"] += 1
                pos = 0
                while pos < len(data):  # bytes past a frame's size are the next command: responses chain exactly
                    if len(data) - pos < 10: bad.append(("malformed", kind, f[:40].hex(), data[:20].hex(), len(data))); break
                    tag, size, rc = struct.unpack(">HII", data[pos:pos + 10]); rcs[hex(rc)] += 1
                    if tag not in (0x8001, 0x8002) or size < 10 or pos + size > len(data):
                        bad.append(("malformed", kind, f[:40].hex(), data[:20].hex(), len(data))); break
                    if rc == 0 and pos == 0 and struct.unpack(">I", f[6:10])[0] in CREATES and size >= 14:
                        o.send(S.frame(0x165, [], data[10:14]))  # same process, same client space
                    pos += size
                if out == "silent" and len(f) >= 10 and struct.unpack(">I", f[2:6])[0] == len(f):
                    bad.append(("silent", kind, f[:40].hex(), len(f)))
        except Lost as e:
            cnt["LOST"] += 1; bad.append(("lost", kind, str(e), f[:48].hex(), len(f)))
            o.close(); o = Owner(port, rng)
        if i % 500 == 499:
            print(f"[{i + 1}/{n} {time.time() - t0:.0f}s] {dict(sorted(cnt.items()))} findings {len(bad)}", file=sys.stderr, flush=True)
        if i % 20 == 19 or i == n - 1:
            ok, dt = healthy()
            try:
                pok = pqc_health(o)
            except (TpmResponseError, Lost, OSError, Exception) as e:  # noqa: BLE001 - any failure is a finding
                pok = False; dt = repr(e)
            cnt["health_ok" if ok and pok else "HEALTH_FAIL"] += 1
            if not (ok and pok): bad.append(("health", i, ok, pok, dt, kind, f[:60].hex()))
            if not alive(): bad.append(("DEAD", i, kind, f[:60].hex())); break
    during = objects(port)
    present = o.handles()
    missing = [name for name, h in (("ML-DSA-65", o.dsa.handle), ("ML-KEM-768", o.kem.handle), ("DA key", o.da.handle),
                                    ("storage", o.storage), ("open sequence", o.seq)) if h not in present]
    for h in (o.dsa.handle, o.kem.handle, o.da.handle, o.storage, o.seq):
        try: o.c.flush(h)
        except Exception: pass  # noqa: BLE001
    o.close(); other.stdin.close(); intact = other.stdout.read().strip() == "intact"; other.wait(30)
    if not intact: bad.append(("OTHER_CLIENT_KEY_BROKEN",))
    time.sleep(0.5)
    after = objects(port); after_else = objects_elsewhere(port); proc1 = proc(pid)
    print(dict(sorted(cnt.items())), f"{time.time() - t0:.0f}s")
    print("response codes:", dict(rcs.most_common(14)))
    print(f"objects/loaded/saved sessions (fresh connection): before {base}, with the owner's objects {with_objects}, "
          f"after fuzzing {during}, after cleanup {after}")
    print(f"  the owner's objects gone after fuzzing: {missing or 'none'} (the open sequence: completed by a frame)")
    print(f"  another process's key usable after the fuzzing: {intact}")
    print(f"  seen by another process: before {base_else}, with the objects {with_else}, after cleanup {after_else}")
    if proc0: print(f"serve RSS kB / open fds: before {proc0}, after {proc1}")
    leak = after != base or after_else != base_else
    if leak: bad.append(("LEAK", base, after, base_else, after_else))
    tb = 0
    if serve_log:
        text = open(serve_log, errors="replace").read(); tb = text.count("Traceback")
        print(f"serve log {serve_log}: {tb} traceback(s), {len(text.splitlines())} line(s)")
    for b in bad[:25]: print(b)
    return 1 if (cnt["HEALTH_FAIL"] or cnt["LOST"] or cnt["GREW"] or leak or tb or any(b[0] in ("DEAD", "malformed", "silent", "OTHER_CLIENT_KEY_BROKEN") for b in bad)) else 0
