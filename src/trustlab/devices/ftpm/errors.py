"""What can go wrong in the fTPM model, as exception types.

``PowerLoss`` is not an error a user made: it is the fault injector cutting
power, and it deliberately derives from neither :class:`TrustlabError` nor
``Exception``, so that no handler can mistake a crash for an error and carry on.
"""

from __future__ import annotations

from trustlab.errors import TrustlabError


class FtpmError(TrustlabError):
    """Base for fTPM-model errors a caller can act on."""


class RpmbError(FtpmError):
    """The RPMB device (or a forged/stale response) refused an operation."""

    def __init__(self, message: str, result: int | None = None) -> None:
        super().__init__(message)
        self.result = result


class StorageUnavailable(FtpmError):
    """The untrusted OS did not carry the request (refused, held, or no driver: a dark period)."""


class StorageCorrupt(FtpmError):
    """Stored state failed authentication or has an impossible layout."""


class TpmRefused(FtpmError):
    """The fTPM refused service; ``rc`` names the TPM 2.0 response code."""

    def __init__(self, message: str, rc: str) -> None:
        super().__init__(f"{rc}: {message}")
        self.rc = rc


class PowerLoss(BaseException):
    """Injected power failure: the TEE's memory is gone, only the RPMB survives.

    A ``BaseException`` (like ``SystemExit``): code that answers every error
    with a response -- the TPM 1.2 engine turns handler exceptions into
    TPM_FAIL -- must not be able to catch the power going out and keep writing.
    """
