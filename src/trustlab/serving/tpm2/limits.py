"""How large a command and a response the served TPM 2.0 takes: one number per profile, enforced and reported.

A chip reports its I/O buffer in TPM2_GetCapability(TPM_PT_MAX_COMMAND_SIZE,
TPM_PT_MAX_RESPONSE_SIZE) and answers a longer command with
TPM_RC_COMMAND_SIZE (Part 3, 5.2 step 2; libtpms' ExecuteCommand). Through
serve that number is the profile's chip's (``pqc_model/data/chips.toml``,
``max_command_size`` with its source), and one place - :class:`FrameLimits` -
hands it to everything that must agree:

- the front end reads frames up to :attr:`FrameLimits.frame` (larger ones are
  read past and refused, :mod:`trustlab.serving.wire`);
- the commands the post-quantum extension answers itself are refused above
  :attr:`FrameLimits.command`, and a response of theirs that would exceed it
  is answered TPM_RC_SIZE instead (what wolfTPM's fwTPM answers when a
  response overflows its buffer);
- TPM2_GetCapability reports :attr:`FrameLimits.command` as both sizes
  (``devices/tpm2/pqc/discovery.py``);
- the control port's ``CMD_SET_BUFFERSIZE`` reports it as the buffer size
  and maximum where it exceeds libtpms' (:attr:`FrameLimits.control_buffer`).

Commands that go on to swtpm still meet libtpms' own buffer
(:data:`BACKEND_MAX`): one longer than that is answered TPM_RC_COMMAND_SIZE
by serve, in libtpms' words, and never forwarded (swtpm would take its tail
for the next command).
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.devices.tpm2.pqc_model import chips

BACKEND_MAX = 4096
"""libtpms' MAX_COMMAND_SIZE = MAX_RESPONSE_SIZE = TPM2_GetBufferSize() as swtpm 0.7 runs it
(TPM_PT_MAX_COMMAND_SIZE 0x1000 from swtpm; TpmProfile_Common.h)."""


@dataclass(frozen=True)
class FrameLimits:
    command: int
    """The profile's TPM_PT_MAX_COMMAND_SIZE = TPM_PT_MAX_RESPONSE_SIZE: the extension's commands' bound."""
    source: str
    backend: int = BACKEND_MAX
    """What the backend TPM (libtpms) takes: the bound of every command forwarded to it."""

    @property
    def frame(self) -> int:
        """The largest frame the front end reads whole: whichever of the two bounds is larger."""
        return max(self.command, self.backend)

    @property
    def control_buffer(self) -> int | None:
        """The buffer size the control channel's ``CMD_SET_BUFFERSIZE`` reports in place of libtpms'
        (:func:`trustlab.serving.control.buffersize_reply`), or None to pass libtpms' answer through.

        Only a profile whose cap is above libtpms' buffer changes it: there serve takes frames
        libtpms' 4096 would refuse, and a client sizing its buffers from the control channel
        (swtpm_ioctl, libtpms-based TCTIs) must see what TPM2_GetCapability reports.
        """
        return self.command if self.command > self.backend else None


def for_profile(name: str) -> FrameLimits:
    """The frame limits of the chip behind the TPM 2.0 profile ``name`` (chips.toml, by name prefix)."""
    chip = chips.chip_for(name)
    return FrameLimits(chip.max_command_size, chip.max_command_source)
