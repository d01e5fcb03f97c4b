"""The contract of a served TPM: where the proxy's commands really run.

The backends are peers beneath the serving layer: the TPM 2.0 ones (a swtpm,
a TCP TPM, a device node: :mod:`trustlab.serving.tpm2.backend`) and the TPM 1.2
engine (:mod:`trustlab.serving.tpm12.engine_backend`). All speak raw TPM frames (``transact``). Those with a swtpm control
channel expose ``ctrl_address`` so the proxy can relay the control traffic it
allows (``CMD_INIT``, ``CMD_SET_LOCALITY`` ...); in-process engines answer
control requests themselves (``control``).

The contract every backend follows (see /work/shared notes, "Backend hooks"):

- ``family``: ``"tpm2"`` (default) or ``"tpm1.2"``. For ``"tpm1.2"`` the proxy
  runs no resource manager and no TPM 2.0 wire cost model; frames carry TPM 1.2
  tags (``0x00C1``..``0x00C3``) and the cost is whatever ``charged()`` reports.
- ``charged()``: component -> ms the backend itself charged for its last
  ``transact`` (in-process engines that keep their own clock), or ``None`` to
  let the proxy price the command from the wire.
- ``control(code, payload)``: the full reply to a swtpm control-channel
  request answered in-process, or ``None`` (relay to ``ctrl_address``).

The proxy's hold, trace, ``--virtual`` mode, control filtering and shutdown
apply to every backend alike.
"""

from __future__ import annotations

from trustlab.errors import TrustlabError


class BackendError(TrustlabError):
    """The TPM behind the proxy cannot be reached or answered nonsense."""


class Backend:
    """A TPM the proxy forwards client commands to (one at a time)."""

    family: str = "tpm2"
    """``"tpm1.2"``: the proxy turns the resource manager and the TPM 2.0 wire cost model off."""

    ctrl_address: tuple[str, int] | str | None = None

    def transact(self, command: bytes) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def charged(self) -> dict[str, float] | None:
        """Component -> ms the backend itself charged for its last ``transact`` (in-process
        engines); ``None`` means the proxy prices the command from the wire."""
        return None

    def control(self, code: int, payload: bytes) -> bytes | None:
        """Answer a swtpm control-channel request in-process (full reply bytes), or ``None``
        if the backend has no in-process control (the proxy then relays to ``ctrl_address``,
        or acknowledges it itself when there is none)."""
        return None

    def lost(self) -> str | None:
        """Why this backend will never answer again (a TPM process it owns has exited), else None.

        A backend that may come back (a TPM serve does not own) is never lost: while it is down its
        commands fail with the generation's failure code. Whoever runs the proxy polls this and stops
        serving (``trustlab serve`` exits non-zero): a TPM that lost its volatile state must not sit
        silently behind an open port, nor be restarted behind the clients' backs.
        """
        return None

    def close(self) -> None:
        pass

    def release(self) -> None:
        """Let go of any connection held between commands."""

    def describe(self) -> str:
        return type(self).__name__
