"""TPM 1.2 return codes as exceptions.

Inside the engine a failing check raises :class:`TpmError` with the spec's
return-code name; the dispatcher turns it into a response frame carrying that
code. On the host side the same exception is raised again from the response,
so application code sees ``TpmError('TPM_AUTHFAIL', ...)`` — a
:class:`TrustlabError`, so the CLI prints one line, never a traceback.
"""

from __future__ import annotations

from trustlab.errors import TrustlabError


class TpmError(TrustlabError):
    """A TPM command failed with a TPM 1.2 return code (Part 2, section 16)."""

    def __init__(self, code: str, detail: str = "", *, dictionary: bool = False, parsed: bool | None = None) -> None:
        from trustlab.devices.tpm12.constants import RC

        self.code = code
        self.dictionary = dictionary  # a wrong secret: counts towards the dictionary-attack lockout
        # did the command parse? A failure before it did keeps the command's sessions (libtpms'
        # authHandleValid); by default only TPM_BAD_PARAM_SIZE means it did not
        self.parsed = code != "TPM_BAD_PARAM_SIZE" if parsed is None else parsed
        self.rc = RC.get(code, RC["TPM_FAIL"])
        super().__init__(f"{code}: {detail}" if detail else code)
