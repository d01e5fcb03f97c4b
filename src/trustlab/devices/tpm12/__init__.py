"""TPM 1.2 reference engine: real crypto, timed from the inside (Gunupudi & Tate 2010).

Applications use :class:`Tpm12` (host side, one method per TPM command);
researchers add commands with :func:`tpm_command`; state persists through an
:class:`NVStore`. See :mod:`.engine` for where time is charged.
"""

from trustlab.compiled import prefer_fresh

prefer_fresh("trustlab.devices.tpm12.merkle")  # a mypyc build of it only if it matches merkle.py (trustlab.compiled)

from trustlab.devices.tpm12.client import HostSession, HostTransport, Tpm12, key_template, secret
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.nvstore import FileNVStore, MemoryNVStore, NVStore
from trustlab.devices.tpm12.registry import Request, Response, tpm_command

__all__ = ["Engine", "FileNVStore", "HostSession", "HostTransport", "MemoryNVStore", "NVStore",
           "Request", "Response", "Tpm12", "TpmError", "key_template", "secret", "tpm_command"]
