"""The engine's buffered OS randomness: every byte handed out once, never shared with a forked child."""

from __future__ import annotations

import os

import pytest

from trustlab.devices.tpm12.primitives import Entropy


def test_slices_are_fresh_and_sized_across_refills():
    e = Entropy()
    seen = [e.take(20) for _ in range(3 * Entropy.CHUNK // 20)]
    assert all(len(s) == 20 for s in seen)
    assert len(set(seen)) == len(seen)
    assert len(e.take(Entropy.CHUNK)) == Entropy.CHUNK  # large requests go to the OS directly
    assert e.take(0) == b""


def test_a_negative_size_is_refused_not_a_rewind():
    e = Entropy()
    first = e.take(20)
    with pytest.raises(ValueError):
        e.take(-20)
    assert e.take(20) != first


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_buffer():
    e = Entropy()
    e.take(20)  # fill the buffer
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report its next nonce
        try:
            os.write(w, e.take(20))
        finally:
            os._exit(0)
    os.close(w)
    child = os.read(r, 20)
    os.close(r)
    os.waitpid(pid, 0)
    assert len(child) == 20 and child != e.take(20)


def test_engines_and_host_share_one_buffer_per_thread_never_one_slice():
    """Short-lived TPMs draw from their thread's buffer (no 4 KiB read per TPM); other threads have their own."""
    import threading

    from trustlab.devices.tpm12 import hostcrypto
    from trustlab.devices.tpm12.primitives import Primitives, thread_entropy
    from trustlab.timing.clock import Clock
    from trustlab.timing.registry import load

    mine = thread_entropy()
    assert thread_entropy() is mine
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(thread_entropy()))
    t.start()
    t.join()
    assert theirs[0] is not mine
    a = Primitives(Clock(load("infineon-2010")), keygen=lambda bits: None)
    b = Primitives(Clock(load("infineon-2010")), keygen=lambda bits: None)
    mine._pos = Entropy.CHUNK  # (the next take reads a fresh chunk)
    drawn = [a.random(20), hostcrypto.nonce(), b.random(20), a.random(20)]
    assert drawn == [mine._buf[i:i + 20] for i in range(0, 80, 20)]  # consecutive slices, each once
    assert mine._pos == 80
