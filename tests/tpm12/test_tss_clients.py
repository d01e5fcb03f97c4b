"""Acceptance by programs others wrote: tpm-tools, tpm-quote-tools and simple-tpm-pk11, step by step.

:mod:`.tss_clients` runs every step of each tool set through TrouSerS' tcsd,
once against libtpms' TPM 1.2 (``swtpm socket``) and once against
``trustlab serve --profile infineon-2010 --virtual``, with physical presence
asserted on both as a BIOS would. Each step must behave as on libtpms: the
same exit status, the same output (modulo keys, nonces and the vendor), the
same ordinal/return-code sequence of frames; data must round-trip (NV,
seal/unseal with and without PCRs, a quote whose signature verifies with the
AIK's public key).

Run ``python -m tests.tpm12.tss_clients`` (with ``PYTHONPATH=src:.``) for the
step table and every difference; ``-s`` here prints the table.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from . import tss_clients as T

pytestmark = pytest.mark.swtpm


def _check_steps(results) -> None:
    for plan, (theirs, ours) in results.items():
        assert len(ours) == len(theirs) == len(T.PLANS[plan]())
        differing = {o.step.title: T.differences(o, t) for o, t in zip(ours, theirs) if T.differences(o, t)}
        assert not differing, f"{plan}:\n" + "\n".join(f"{k}:\n  " + "\n  ".join(v) for k, v in differing.items())


def _check_round_trips(results) -> None:
    """Every step with a data check (NV, seal/unseal with and without PCRs, the quote's signature)
    succeeded and passed it, on libtpms (the harness is right) and on serve."""
    for plan, (theirs, ours) in results.items():
        for outcomes in (theirs, ours):
            checked = [o for o in outcomes if o.step.check is not None]
            failed = [(o.step.title, o.rc, o.problem) for o in checked if o.rc != 0 or o.problem]
            assert not failed, f"{plan}: {failed}"
    quote = [o for o in results["tpm-quote-tools + simple-tpm-pk11"][1] if o.step.check is T.quote_verifies]
    assert len(quote) == 1 and quote[0].rc == 0 and quote[0].problem is None


def _check_coverage(results) -> None:
    """Not only the happy path: -s status queries and wrong-password steps are in the plan, and
    their return codes are part of the frame comparison."""
    steps = [o.step for o in results["tpm-tools"][1]]
    assert sum("-s" in s.argv for s in steps) >= 15
    assert sum(s.stdin == T.WRONG or any("wrong" in a for a in s.argv) for s in steps) >= 6
    assert len(steps) >= 83


def test_tpm12_programs_behave_as_on_libtpms() -> None:
    """One test (xdist would run a module fixture once per worker): physical presence asserted on
    both, every step alike, data round trips, the plan's coverage."""
    why = T.missing()
    if why:
        pytest.skip(why)
    workdir = Path(tempfile.mkdtemp(prefix="trustlab-tss-"))  # not under pytest's 0700 tmp: tcsd runs as tss
    workdir.chmod(0o755)
    try:
        results = {name: T.compare(name, workdir) for name in T.PLANS}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n" + T.table(results))
    assert T.PRESENCE_RCS == {"libtpms": [0, 0], "served": [0, 0]}
    _check_steps(results)
    _check_round_trips(results)
    _check_coverage(results)
