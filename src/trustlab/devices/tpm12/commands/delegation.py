"""TPM_Delegate_ReadTable (Part 3, 19.5): the public part of the family and delegate tables.

Anyone may read them (no authorization, no owner needed: libtpms' TPM_CHECK_ALLOW_NO_OWNER). The
answer is familyTableSize + familyTable (the valid TPM_FAMILY_TABLE_ENTRY rows, each with its tag)
and delegateTableSize + delegateTable (TPM_DELEGATE_INDEX + TPM_DELEGATE_PUBLIC per valid row), as
libtpms' TPM_FamilyTable_StoreValid / TPM_DelegateTable_StoreValid write them.

Delegation itself (TPM_Delegate_Manage, CreateOwnerDelegation, LoadOwnerDelegation, DSAP use of a
row ...) is not implemented here, so no command can add a row: both tables stay empty, as on a TPM
whose owner never delegated, and this command answers two empty arrays.
"""

from __future__ import annotations

from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import sized


@tpm_command("TPM_Delegate_ReadTable")
def delegate_read_table(tpm, req: Request) -> Response:
    req.params.end()
    return Response(params=sized(b"") + sized(b""))  # no valid family row, no valid delegate row
