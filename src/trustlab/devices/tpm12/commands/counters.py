"""Physical monotonic counters (Part 3, 25): create, increment, read, release.

TPM 1.2 rules enforced here: a new counter starts one above the largest value
any counter ever had; only one counter may be incremented per power cycle
(after the first TPM_IncrementCounter, incrementing another counter fails
with TPM_BAD_COUNTER until TPM_Startup); values live in NV and are saved before
the response, so a counter never goes backwards across restarts. The NV write
is the slow part on real chips: ``counter_inc`` and ``counter_read`` are
charged when the profile defines them (the 2010 profiles do not; their model
has only the dispatcher and crypto terms).
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.state import Counter
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

MAX_COUNTERS = 4
_TAG_COUNTER_VALUE = struct.pack(">H", C.TPM_TAG_COUNTER_VALUE)
_U32 = struct.Struct(">I").pack


def counter_value(count_id: int, c: Counter) -> bytes:
    """TPM_COUNTER_VALUE: tag, 4-byte label, UINT32 count."""
    return _TAG_COUNTER_VALUE + bytes(c.label) + _U32(c.value)  # (no Writer: on every counter command)


def _counter(tpm, count_id: int) -> Counter:
    c = tpm.state.counters.get(count_id)
    if c is None:
        raise TpmError("TPM_BAD_COUNTER", f"no counter {count_id}")
    return c


@tpm_command("TPM_CreateCounter", auth=(1,))
def create_counter(tpm, req: Request) -> Response:
    enc_auth, label = req.params.raw(20), req.params.raw(4)
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    if len(tpm.state.counters) >= MAX_COUNTERS:
        raise TpmError("TPM_RESOURCES", f"the TPM holds at most {MAX_COUNTERS} counters")
    auth = req.auth.decrypt_auth(0, enc_auth)
    st = tpm.state
    start = int(st.extra.get("max_counter", "0")) + 1
    count_id = st.next_counter_id
    st.next_counter_id += 1
    st.counters[count_id] = c = Counter(label, auth, start)
    st.extra["max_counter"] = str(start)
    tpm.crypto.optional("counter_inc")
    tpm.mark_dirty()
    return Response(params=Writer().u32(count_id).raw(counter_value(count_id, c)).bytes())


@tpm_command("TPM_IncrementCounter", auth=(1,))
def increment_counter(tpm, req: Request) -> Response:
    count_id = req.params.u32()
    req.params.end()
    c = _counter(tpm, count_id)
    req.auth.check(0, c.auth, (C.TPM_ET_COUNTER, count_id))
    if tpm.counter_this_boot not in (None, count_id):
        raise TpmError("TPM_BAD_COUNTER",
                       f"counter {tpm.counter_this_boot} was already incremented this boot")
    tpm.counter_this_boot = count_id
    c.value += 1
    st = tpm.state
    st.extra["max_counter"] = str(max(int(st.extra.get("max_counter", "0")), c.value))
    tpm.crypto.optional("counter_inc")
    tpm.mark_dirty()
    return Response(counter_value(count_id, c))


@tpm_command("TPM_ReadCounter")
def read_counter(tpm, req: Request) -> Response:
    count_id = req.params.u32()
    req.params.end()
    c = _counter(tpm, count_id)
    tpm.crypto.optional("counter_read")
    return Response(counter_value(count_id, c))


@tpm_command("TPM_ReleaseCounter", auth=(1,))
def release_counter(tpm, req: Request) -> Response:
    count_id = req.params.u32()
    req.params.end()
    c = _counter(tpm, count_id)
    req.auth.check(0, c.auth, (C.TPM_ET_COUNTER, count_id))
    del tpm.state.counters[count_id]
    if tpm.counter_this_boot == count_id:
        tpm.counter_this_boot = None
    tpm.mark_dirty()
    return Response()
