"""Dictionary-attack protection of PQC key passwords is the TPM's own (libtpms'), side by side with a
classical key of swtpm's: the same response codes, the same TPM_PT_LOCKOUT_COUNTER, the same lockout,
the same TPM2_DictionaryAttackLockReset. The classical key is the reference; libtpms decides both."""

from __future__ import annotations

import struct

import pytest

from trustlab.devices.tpm2.pqc import lockout
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import DEFAULT_SIGN_ATTRS, PqcClient, TpmResponseError, external_mu, frame, \
    password, split_response
from trustlab.serving.proxy import timed_swtpm

from .conftest import needs_swtpm

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
pytestmark = [pytest.mark.swtpm, needs_swtpm]
TPM_RH_LOCKOUT = 0x4000000A
TPM_RC_AUTH_FAIL_S1 = 0x98E
TPM_RC_BAD_AUTH_S1 = 0x9A2


def transact(t: PqcClient, command: bytes) -> int:
    return S.response_code(t.transport.transact(command))


def lockout_counter(t: PqcClient) -> int:
    r = t.transport.transact(frame(0x17A, [], S.u32(6) + S.u32(lockout.TPM_PT_LOCKOUT_COUNTER) + S.u32(1)))
    return struct.unpack_from(">I", r, 23)[0]


def lock_reset(t: PqcClient) -> None:
    assert transact(t, frame(0x139, [TPM_RH_LOCKOUT], b"", [password()])) == 0  # DictionaryAttackLockReset


def da_parameters(t: PqcClient, max_tries: int, recovery_s: int = 1000, lockout_recovery_s: int = 1000) -> None:
    assert transact(t, frame(0x13A, [TPM_RH_LOCKOUT], S.u32(max_tries) + S.u32(recovery_s)
                             + S.u32(lockout_recovery_s), [password()])) == 0


def classical_user(t: PqcClient):
    """An HMAC key of swtpm's (DA-protected, password 'pw'); returns use(password) -> rc (TPM2_HMAC)."""
    params = (S.tpm2b(S.tpm2b(b"pw") + S.tpm2b(b"")) + S.tpm2b(lockout._canary_template()) + S.tpm2b(b"")
              + S.u32(0))
    (handle,), _ = split_response(t.call("TPM2_CreatePrimary", frame(0x131, [S.TPM_RH_OWNER], params,
                                                                     [password()])), 1)
    return lambda pw: transact(t, frame(0x155, [handle], S.tpm2b(b"x") + S.u16(0x000B), [password(pw)]))


def pqc_user(t: PqcClient, no_da: bool = False):
    attrs = DEFAULT_SIGN_ATTRS | S.NO_DA if no_da else DEFAULT_SIGN_ATTRS
    key = t.create_primary("ML-DSA-44", auth=b"pw", attributes=attrs)

    def use(pw: bytes) -> int:
        try:
            t.sign_digest(key.handle, external_mu(key.public.unique, b"m"), auth=pw)
        except TpmResponseError as exc:
            return exc.rc
        return 0
    return use


def attack(t: PqcClient, use, tries: int) -> list[tuple[int, int]]:
    """(response code, lockout counter) after each of ``tries`` wrong passwords, then the right one."""
    return [(use(b"wrong"), lockout_counter(t)) for _ in range(tries)] + [(use(b"pw"), lockout_counter(t))]


@pytest.fixture
def tpm():
    with timed_swtpm(PROFILE, virtual=True) as proxy, PqcClient.connect(proxy.tcti) as t:
        yield t


@pytest.mark.parametrize("max_tries", [None, 6], ids=["swtpm-default", "maxTries-6"])
def test_wrong_pqc_passwords_lock_the_tpm_out_exactly_as_wrong_classical_ones(tpm, max_tries):
    classical, pqc = classical_user(tpm), pqc_user(tpm)
    classical(b"pw")  # libtpms answers the first DA-protected use after Startup TPM_RC_RETRY (daUsed)
    if max_tries is not None:
        da_parameters(tpm, max_tries)
    lock_reset(tpm)
    limit = max_tries or 3  # libtpms' DAPreInstall_Init
    reference = attack(tpm, classical, limit + 2)
    assert reference[:limit] == [(TPM_RC_AUTH_FAIL_S1, n) for n in range(1, limit + 1)]
    assert reference[limit:] == [(lockout.TPM_RC_LOCKOUT, limit)] * 3  # the right password too
    lock_reset(tpm)
    assert attack(tpm, pqc, limit + 2) == reference
    lock_reset(tpm)
    assert pqc(b"pw") == 0 and classical(b"pw") == 0 and lockout_counter(tpm) == 0


def test_pqc_and_classical_failures_add_up_in_one_counter(tpm):
    classical, pqc = classical_user(tpm), pqc_user(tpm)
    classical(b"pw")
    lock_reset(tpm)
    assert [classical(b"wrong"), pqc(b"wrong"), classical(b"wrong")] == [TPM_RC_AUTH_FAIL_S1] * 3
    assert (pqc(b"pw"), classical(b"pw"), lockout_counter(tpm)) == (lockout.TPM_RC_LOCKOUT,) * 2 + (3,)


def test_no_da_keys_and_sequences_answer_bad_auth_and_count_nothing(tpm):
    no_da = pqc_user(tpm, no_da=True)
    lock_reset(tpm)
    assert attack(tpm, no_da, 5)[:5] == [(TPM_RC_BAD_AUTH_S1, 0)] * 5
    key = tpm.create_primary("ML-DSA-44")
    (seq,), _ = split_response(tpm.call("TPM2_SignSequenceStart", frame(0x1AA, [key.handle],
                                        S.tpm2b(b"seq-pw") + S.tpm2b(b""))), 1)
    for _ in range(4):  # libtpms makes every sequence object DA-exempt
        assert transact(tpm, frame(0x15C, [seq], S.tpm2b(b"m"), [password(b"wrong")])) == TPM_RC_BAD_AUTH_S1
    assert lockout_counter(tpm) == 0


def test_a_failure_counts_without_a_resource_manager_when_the_tpm_object_memory_is_full():
    """``--no-rm``: clients' objects stay loaded; the canary borrows a slot and gives it back."""
    with timed_swtpm(PROFILE, virtual=True, rm=False) as proxy, PqcClient.connect(proxy.tcti) as t:
        pqc = pqc_user(t)
        full = [t.create_storage_primary() for _ in range(3)]  # libtpms' MAX_LOADED_OBJECTS
        with pytest.raises(TpmResponseError):
            t.create_storage_primary()
        lock_reset(t)
        assert pqc(b"wrong") == TPM_RC_AUTH_FAIL_S1 and lockout_counter(t) == 1
        listed = t.transport.transact(frame(0x17A, [], S.u32(1) + S.u32(0x80000000) + S.u32(8)))
        assert struct.unpack_from(">3I", listed, 19) == tuple(full)  # the same objects at the same handles
        assert all(transact(t, frame(0x173, [h], b"")) == 0 for h in full)


class _CanaryTpm:
    """A backend whose DA state reads 0 of 3 and whose canary HMAC answers ``refusal`` (no swtpm needed)."""

    def __init__(self, refusal: int) -> None:
        self.refusal, self.sent = refusal, []

    def __call__(self, command: bytes) -> bytes:
        code = struct.unpack_from(">I", command, 6)[0]
        self.sent.append(code)
        body = {0x17A: b"\x00" + S.u32(6) + S.u32(2) + S.u32(lockout.TPM_PT_LOCKOUT_COUNTER) + S.u32(0)
                + S.u32(lockout.TPM_PT_MAX_AUTH_FAIL) + S.u32(3),
                0x131: S.u32(0x80000001)}.get(code, b"")
        rc = self.refusal if code == 0x155 else 0
        return struct.pack(">HII", 0x8001, 10 + (0 if rc else len(body)), rc) + (b"" if rc else body)


@pytest.mark.parametrize("refusal", [0x923, 0x101], ids=["TPM_RC_NV_RATE", "TPM_RC_FAILURE"])
def test_a_wrong_password_the_tpm_did_not_count_is_not_answered_as_a_wrong_password(refusal):
    """Fail closed: when libtpms does not count the canary's failure (a warning such as TPM_RC_NV_RATE, where
    libtpms answers the same for its own keys without comparing the password, or a fault), the client gets
    that code, never TPM_RC_AUTH_FAIL: a guess the TPM did not count must not tell the guesser anything."""
    from types import SimpleNamespace

    from trustlab.devices.tpm2 import extensions as ext
    from trustlab.devices.tpm2.pqc.state import authorize

    backend = _CanaryTpm(refusal)
    ctx = ext.Context(1, None, backend, ext.ExtensionState(0), backend_direct=backend)
    cmd = ext.parse_command(frame(0x1A6, [0x80FF0000], b"", [password(b"wrong")]), "TPM2_SignDigest", 1)
    key = SimpleNamespace(public=SimpleNamespace(attributes=DEFAULT_SIGN_ATTRS), auth=b"pw")
    with pytest.raises(ext.TpmError) as refused:
        authorize(cmd, 0, key, ctx)
    assert refused.value.rc == refusal
    assert backend.sent == [0x17A, 0x131, 0x155, 0x165]  # lockout test, canary made, refused once, flushed
