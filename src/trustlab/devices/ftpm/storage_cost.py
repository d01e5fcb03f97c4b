"""RPMB frames each TPM 2.0 command costs a firmware TPM -- measured, not assumed.

A discrete TPM has its own NV memory; a firmware TPM must push every change of
its NV image through RPMB. Which commands change the NV image, and by how much,
is a property of the TCG reference code, so we measure it on that code: the
paper's command set runs on swtpm (libtpms = the TCG reference implementation)
through tpm2-pytss, and after every command the permanent-state image libtpms
hands to its NV backend (``tpm2-00.permall``) is saved into the fTPM's atomic
store, exactly as an fTPM would persist it. The RPMB frames that save writes
(changed blocks + the bit-vector commit) and what they cost under a storage
profile are the command's storage cost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trustlab.devices.ftpm.atomic_store import PAYLOAD
from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.errors import FtpmError
from trustlab.devices.ftpm.platform import Platform
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

PERMALL = "tpm2-00.permall"
# libtpms saves its Clock to NV whenever Clock (ms) crosses a multiple of
# 2^NV_CLOCK_UPDATE_INTERVAL ms (TimeClockUpdate in src/tpm2/Time.c; the interval
# is 12 in libtpms' TpmProfile_Common.h: every 4.096 s of real time). That save
# belongs to no command, so a rep it may have fallen into is measured again.
# libtpms defers it: "Changing the clock alone does not cause the permanent state
# to be written to storage" (its patch to TimeClockUpdate), so the saved ORDERLY_DATA
# (clock, the DRBG state, the DA timers: ~54 changed bytes, one more RPMB frame)
# reaches the image with the *next* command that writes NV -- whichever that is,
# depending on how fast the host ran the commands before it.
CLOCK_SAVE_BITS = 12
CLOCK_SAVE_RETRIES = 5

# (label, TPM 2.0 command, formula variant) -- the paper's Sec. 10.1 command set
PAPER_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("create RSA-2048 key", "TPM2_Create", "rsa2048"),
    ("seal", "TPM2_Create", "seal"),
    ("unseal", "TPM2_Unseal", "seal"),
    ("sign", "TPM2_Sign", "rsa2048"),
    ("verify", "TPM2_VerifySignature", "rsa2048"),
    ("encrypt", "TPM2_RSA_Encrypt", "rsa2048"),
    ("decrypt", "TPM2_RSA_Decrypt", "rsa2048"),
    ("load", "TPM2_Load", "rsa2048"),
)
EXTRA_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("unseal, wrong PIN (DA)", "TPM2_Unseal", "seal"),
    ("NV increment", "TPM2_NV_Increment", ""),
)


@dataclass(frozen=True)
class StorageCost:
    label: str
    command: str
    variant: str
    reps: int
    nv_bytes_changed: float   # mean bytes of the NV image that differ after the command
    rpmb_frames: float        # mean RPMB frames written (shadow blocks + commit)
    storage_ms: float         # mean modelled time of those writes (and their reads/MACs)


def _changed_bytes(a: bytes, b: bytes) -> int:
    n = max(len(a), len(b))
    a, b = a.ljust(n, b"\0"), b.ljust(n, b"\0")
    return sum(1 for x, y in zip(a, b) if x != y)


class _Session:
    """The paper's objects on a fresh swtpm: an RSA signing key, an RSA decryption key, a sealed blob."""

    saved_window: int | None = None
    """The clock-save window whose save the image is known to hold (None: not known).

    An image written in window W holds every clock save up to W; one written
    earlier may be missing a save that the next NV write will flush.
    """

    def __init__(self) -> None:
        os.environ.setdefault("TSS2_LOG", "all+NONE")
        from tpm2_pytss import ESAPI, TCTILdr
        from tpm2_pytss.constants import TPM2_ALG, TPM2_NT, TPMA_NV, TPMA_OBJECT
        from tpm2_pytss.types import (TPM2B_NV_PUBLIC, TPM2B_PUBLIC, TPM2B_SENSITIVE_CREATE, TPMS_NV_PUBLIC,
                                      TPMS_SENSITIVE_CREATE, TPMT_RSA_DECRYPT, TPMT_SIG_SCHEME)

        from trustlab.serving.swtpm import Swtpm

        self.tpm = Swtpm().start()
        try:
            self.esys = ESAPI(TCTILdr("swtpm", self.tpm.tcti_conf))
            e = self.esys
            base = TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT
            key = base | TPMA_OBJECT.SENSITIVEDATAORIGIN
            self.templates = {
                "sign": TPM2B_PUBLIC.parse("rsa2048:rsassa-sha256:null",
                                           objectAttributes=key | TPMA_OBJECT.SIGN_ENCRYPT),
                "dec": TPM2B_PUBLIC.parse("rsa2048:null:null", objectAttributes=key | TPMA_OBJECT.DECRYPT),
                "seal": TPM2B_PUBLIC.parse("keyedhash", objectAttributes=base),  # DA-protected: no NODA
            }
            self.pin = b"2468"
            self.sealed_in = TPM2B_SENSITIVE_CREATE(TPMS_SENSITIVE_CREATE(data=b"0123456789", userAuth=self.pin))
            self.scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.RSASSA)
            self.scheme.details.any.hashAlg = TPM2_ALG.SHA256
            self.oaep = TPMT_RSA_DECRYPT(scheme=TPM2_ALG.OAEP)
            self.oaep.details.oaep.hashAlg = TPM2_ALG.SHA256
            self.digest = bytes(range(32))
            # the wrong-PIN probe must not drive the TPM into lockout while we measure
            e.dictionary_attack_parameters(new_max_tries=1 << 20, new_recovery_time=86400, lockout_recovery=0)
            self.parent, *_ = e.create_primary(None, "rsa2048:aes128cfb")
            self.blobs = {k: e.create(self.parent, self.sealed_in if k == "seal" else None, t)[:2]
                          for k, t in self.templates.items()}
            self.sig = self.with_key("sign", lambda h: e.sign(h, self.digest, self.scheme))
            self.ct = self.with_key("dec", lambda h: e.rsa_encrypt(h, self.digest, self.oaep))
            nv_pub = TPM2B_NV_PUBLIC(TPMS_NV_PUBLIC(nvIndex=0x01500010, nameAlg=TPM2_ALG.SHA256, dataSize=8,
                                                    attributes=TPMA_NV.AUTHWRITE | TPMA_NV.AUTHREAD | TPMA_NV.NO_DA
                                                    | (TPM2_NT.COUNTER << 4)))
            self.counter = e.nv_define_space(b"", nv_pub)
            e.nv_increment(self.counter)
        except BaseException:  # an error, Ctrl-C or SIGTERM while preparing: the swtpm and its state go
            self.tpm.stop()
            raise

    def with_key(self, kind: str, use: Callable[[object], object]) -> object:
        """Load a key, use it, flush it: libtpms has only three object slots.

        TPM2_Load and TPM2_FlushContext do not touch the NV image (the
        measurement shows it), so wrapping a command in them leaves its
        storage cost unchanged.
        """
        h = self.esys.load(self.parent, *self.blobs[kind])
        try:
            return use(h)
        finally:
            self.esys.flush_context(h)

    def image(self) -> bytes:
        path = Path(self.tpm.state_dir) / PERMALL
        return path.read_bytes() if path.exists() else b""

    def clock_window(self) -> int:
        """Which 4.096 s clock-save window the TPM's Clock is in (TPM2_ReadClock writes no NV)."""
        return self.esys.read_clock().clockInfo.clock >> CLOCK_SAVE_BITS

    def measured(self, act: Callable[[], object]) -> tuple[bytes, bytes, list[bytes]]:
        """NV images before and after ``act``, from a run the periodic clock save did not fall into.

        A save falls into a run if the window changes during it, or if the run
        writes NV while a save from an earlier window is still pending (libtpms
        flushes it with the next NV write, see CLOCK_SAVE_BITS). A run that
        writes NV within one window leaves no save pending, so a rerun is clean.
        A run the save may have hit still happened (the TPM's state moved on),
        so its image comes back in ``skipped`` for the caller to persist. A
        command slower than the save interval cannot avoid it: after
        CLOCK_SAVE_RETRIES runs the last one counts, save included.
        """
        skipped: list[bytes] = []
        for _ in range(CLOCK_SAVE_RETRIES):
            before, after, clean = self.run(act)
            if clean:
                break
            skipped.append(after)
        else:
            skipped.pop()
        return before, after, skipped

    def run(self, act: Callable[[], object]) -> tuple[bytes, bytes, bool]:
        """Run ``act`` once: NV images before and after, and whether no clock save can be in the change."""
        window = self.clock_window()
        before = self.image()
        act()
        after = self.image()
        quiet = self.clock_window() == window
        wrote = after != before
        clean = quiet and (not wrote or self.saved_window == window)
        if wrote:
            self.saved_window = window if quiet else None
        return before, after, clean

    def action(self, label: str) -> Callable[[], object]:
        e = self.esys

        def create_key():
            e.create(self.parent, None, self.templates["sign"])

        def seal():
            e.create(self.parent, self.sealed_in, self.templates["seal"])

        def unseal(pin: bytes):
            def run():
                h = e.load(self.parent, *self.blobs["seal"])
                try:
                    e.tr_set_auth(h, pin)
                    try:
                        return e.unseal(h)
                    except Exception:  # noqa: BLE001 - the wrong PIN is the point
                        return None
                finally:
                    e.flush_context(h)
            return run

        def load():
            e.flush_context(e.load(self.parent, *self.blobs["sign"]))

        table: dict[str, Callable[[], object]] = {
            "create RSA-2048 key": create_key,
            "seal": seal,
            "unseal": unseal(self.pin),
            "unseal, wrong PIN (DA)": unseal(b"wrong"),
            "sign": lambda: self.with_key("sign", lambda h: e.sign(h, self.digest, self.scheme)),
            "verify": lambda: self.with_key("sign", lambda h: e.verify_signature(h, self.digest, self.sig)),
            "encrypt": lambda: self.with_key("dec", lambda h: e.rsa_encrypt(h, self.digest, self.oaep)),
            "decrypt": lambda: self.with_key("dec", lambda h: e.rsa_decrypt(h, self.ct, self.oaep)),
            "load": load,
            "NV increment": lambda: e.nv_increment(self.counter),
        }
        return table[label]

    def close(self) -> None:
        try:
            self.esys.close()
        finally:
            self.tpm.stop()


def measure(storage: Profile, reps: int = 3, commands=PAPER_COMMANDS + EXTRA_COMMANDS,
            seed: int = 0) -> list[StorageCost]:
    """Run each command ``reps`` times on swtpm; persist its NV image through the fTPM store."""
    if reps < 1:
        raise FtpmError(f"reps must be at least 1, got {reps}")
    try:
        session = _Session()
    except ImportError as exc:
        raise FtpmError(f"measuring storage costs needs tpm2-pytss: {exc}") from None
    try:
        image = session.image()
        n_blocks = -(-(len(image) + 4) // PAYLOAD) + 4
        clock = Clock(storage, seed=seed)
        platform = Platform(n_blocks=n_blocks, seed=seed, clock=clock)
        _, store = platform.boot()
        nv = RpmbNVStore(store)
        nv.save(image)
        for label, _, _ in commands:  # warm-up: first-use effects are not per-command costs
            nv.save(session.run(session.action(label))[1])
        out = []
        for label, command, variant in commands:
            changed = frames = 0
            ms = 0.0
            act = session.action(label)
            for _ in range(reps):
                before, after, skipped = session.measured(act)
                for image in skipped:  # the store follows the TPM through runs not counted
                    nv.save(image)
                changed += _changed_bytes(before, after)
                written = platform.device.stats.frames_written
                with clock.command("fTPM NV save") as record:  # summed from 0: not a difference of
                    nv.save(after)                              # absolute times, whose rounding varies
                ms += record.ms
                frames += platform.device.stats.frames_written - written
            out.append(StorageCost(label=label, command=command, variant=variant, reps=reps,
                                   nv_bytes_changed=changed / reps, rpmb_frames=frames / reps,
                                   storage_ms=ms / reps))
        return out
    finally:
        session.close()
