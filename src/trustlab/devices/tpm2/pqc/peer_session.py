"""One TPM under the differential check: a :class:`Session` sends frames and records a :class:`Step` each.

Shared by the scenarios (:mod:`.peer_scenarios`, which drive a session) and the
check (:mod:`.peer_check`, which runs the scenarios and compares the steps), so
neither imports the other for it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable

from trustlab.devices.tpm2.extensions import TpmError
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.peer_shapes import creation_shape, parameters, public_shape, skip2b
from trustlab.errors import TrustlabError

PW = S.password()


@dataclass
class Step:
    scenario: str
    label: str
    code: int
    rc: int
    shape: Any = None


def normalized(rc: int) -> int:
    """A response code without the handle/parameter/session number of a format-one code."""
    return rc & 0xBF if rc & 0x80 else rc


class Session:
    """Sends a scenario's frames to one TPM and records a :class:`Step` per command."""

    def __init__(self, connect: Callable[[], Callable[[bytes], bytes]]) -> None:
        self.connect = connect
        self.transact = connect()
        self.steps: list[Step] = []
        self.scenario = ""
        self.reconnects = 0

    def _exchange(self, command: bytes) -> bytes:
        """One command; a TPM that ended the connection (a frame it could not take) is reconnected once."""
        try:
            return self.transact(command)
        except (TrustlabError, OSError):
            self.reconnects += 1
            self.transact = self.connect()
            return self.transact(command)

    def send(self, label: str, command: bytes, shape: Callable[[bytes], Any] | None = None) -> bytes:
        response = self._exchange(command)
        rc = S.response_code(response)
        value = None
        if rc == 0 and shape is not None:
            try:
                value = shape(response)
            except (TpmError, struct.error, ValueError, IndexError) as exc:
                value = {"unreadable": str(exc)}
        self.steps.append(Step(self.scenario, label, struct.unpack_from(">I", command, 6)[0], rc, value))
        return response

    def ok(self, response: bytes) -> bool:
        return S.response_code(response) == 0

    # -- commands both scenarios use

    def create_primary(self, label: str, area: bytes) -> tuple[int | None, bytes]:
        """(handle, outPublic area) of a new owner-hierarchy primary, (None, b"") if refused."""
        response = self.send(label, S.frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create() + S.tpm2b(area)
                                            + S.tpm2b(b"") + S.u32(0), [PW]),
                             lambda rsp: {"public": public_shape(parameters(rsp, 1).tpm2b()),
                                          **creation_shape(skip2b(parameters(rsp, 1)))})
        if not self.ok(response):
            return None, b""
        return struct.unpack_from(">I", response, 10)[0], parameters(response, 1).tpm2b()

    def flush(self, handle: int | None) -> None:
        if handle is not None:
            self._exchange(S.frame(0x165, [], S.u32(handle)))
