"""Virtual monotonic counters on a TPM 1.2: log-based and hash-tree schemes.

Modules: :mod:`.base` (prover/verifier interface, rejection reasons),
:mod:`.device` (provisioning), :mod:`.logbased`, :mod:`.hashtree` with
:mod:`.tree` (host-held sparse Merkle tree; the TPM side is the engine's
TPM_ExecuteHashTree), :mod:`.model` (the paper's formulas),
:mod:`.schemes` (assembly), :mod:`.runner` (workload execution).
"""
