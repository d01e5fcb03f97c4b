"""The untrusted OS that carries RPMB frames for the TEE (tee-supplicant's role).

The secure world has no storage driver of its own: it hands sealed request
frames to the normal world, which issues the eMMC command sequence and hands
the response frames back. Everything here is therefore adversarial by design:
the OS may refuse or delay writes, hold a write and deliver it later, replay
captured requests or responses, or have no driver at all (a *dark period*).
None of these may make the TEE accept stale or forged state; the worst the OS
can do is deny service, which the TEE must turn into a safe refusal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.errors import StorageUnavailable
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.rpmb import RpmbDevice
from trustlab.timing.clock import Clock


@dataclass
class OsBehaviour:
    """How the OS treats RPMB traffic; defaults are an honest, available OS."""

    available: bool = True          # False = dark period: no storage driver loaded
    refuse_writes: bool = False     # drop authenticated writes, report an error
    hold_writes: bool = False       # keep write requests, report an error, deliver later
    delay_ms: float = 0.0           # extra latency per request (advances physical time)
    replay_responses: bool = False  # answer with captured older responses (reads and writes)


@dataclass
class Capture:
    """Everything the OS saw on the bus: raw material for replay attacks."""

    write_requests: list[list[bytes]] = field(default_factory=list)
    write_responses: list[list[bytes]] = field(default_factory=list)
    read_responses: dict[int, list[list[bytes]]] = field(default_factory=dict)  # by request type


class NormalWorld:
    """Carries RPMB requests between the TEE and the device, honestly or not."""

    def __init__(self, device: RpmbDevice, *, behaviour: OsBehaviour | None = None,
                 rail: PowerRail | None = None, clock: Clock | None = None) -> None:
        self.device = device
        self.behaviour = behaviour or OsBehaviour()
        self.rail = rail or PowerRail()
        self.clock = clock
        self.capture = Capture()
        self.held: list[list[bytes]] = []
        self.requests = 0

    # ---- the RPC the TEE calls ----------------------------------------------

    def rpmb(self, request: list[bytes], response_frames: int = 1) -> list[bytes]:
        """Run one RPMB operation and return the device's response frames."""
        b = self.behaviour
        if self.rail.tripped:  # nothing runs after the power went out in this boot
            self.rail.lose_power("after power loss")
        if not b.available:
            raise StorageUnavailable("no RPMB driver in the normal world (dark period)")
        kind = rf.frame_type(request[0])
        is_write = kind in (rf.REQ_AUTH_WRITE, rf.REQ_KEY_PROGRAM)
        if is_write:
            self.capture.write_requests.append(list(request))
            if b.replay_responses and self.capture.write_responses:
                # drop the write and answer with an old success response
                return self.capture.write_responses[-1]
            if b.refuse_writes:
                raise StorageUnavailable("the OS refused to carry an RPMB write")
            if b.hold_writes:
                self.held.append(list(request))
                raise StorageUnavailable("the OS is holding an RPMB write")
        self.requests += 1
        if self.clock is not None:
            self.clock.charge("rpmb_request")
            if b.delay_ms:
                self.clock.charge_ms("os_delay", b.delay_ms)
        self._send(request, "request")
        if is_write:
            self._send([rf.Frame(req_resp=rf.REQ_RESULT_READ).to_bytes()], "result-read")
        response = self._receive()
        if is_write:
            self.capture.write_responses.append(response)
        else:
            past = self.capture.read_responses.setdefault(kind, [])
            if b.replay_responses and past:
                response = past[0]  # the oldest one the OS kept
            past.append(response)
        return response

    # ---- the bus, with crash points --------------------------------------------

    def _send(self, frames: list[bytes], what: str) -> None:
        kind = rf.frame_type(frames[0])
        name = {rf.REQ_AUTH_WRITE: "write", rf.REQ_AUTH_READ: "read", rf.REQ_READ_COUNTER: "counter",
                rf.REQ_KEY_PROGRAM: "key", rf.REQ_RESULT_READ: "write"}.get(kind, "other")
        for i, _ in enumerate(frames):
            label = f"{name} {what} frame {i}"
            if self.rail.point(f"before {label}"):
                self.device.power_loss()
                self.rail.lose_power(f"before {label}")
            if self.rail.point(f"mid {label}"):
                self.device.transfer_partial(rf.FRAME_SIZE // 2)
                self.device.power_loss()
                self.rail.lose_power(f"mid {label}")
        self.device.transfer_in(frames)

    def _receive(self) -> list[bytes]:
        if self.rail.point("before response"):
            self.device.power_loss()
            self.rail.lose_power("before response")
        return self.device.transfer_out()

    # ---- attacks ------------------------------------------------------------------

    def release_held(self) -> list[int]:
        """Deliver held writes now; returns the device's result code for each."""
        results = []
        for request in self.held:
            results.append(self.inject(request))
        self.held = []
        return results

    def inject(self, request: list[bytes]) -> int:
        """Send a captured write request straight to the device (a replay)."""
        self.device.transfer_in(request)
        self.device.transfer_in([rf.Frame(req_resp=rf.REQ_RESULT_READ).to_bytes()])
        return int.from_bytes(self.device.transfer_out()[0][508:510], "big")

    def replay_all_writes(self) -> tuple[int, int]:
        """Replay every write request ever captured: (attempts, accepted)."""
        accepted = 0
        requests = list(self.capture.write_requests)
        for request in requests:
            if rf.frame_type(request[0]) != rf.REQ_AUTH_WRITE:
                continue
            if self.inject(request) == rf.RES_OK:
                accepted += 1
        return len(requests), accepted
