"""Virtual monotonic counters on a TPM 1.2: log-based and hash-tree schemes.

Modules: :mod:`.base` (prover/verifier interface, rejection reasons),
:mod:`.device` (provisioning), :mod:`.logbased`, :mod:`.hashtree` with
:mod:`.tree` (host-held sparse Merkle tree) and :mod:`.tpm_command` (the
counter-aware hash-tree command), :mod:`.model` (the paper's formulas),
:mod:`.schemes` (assembly), :mod:`.runner` (workload execution).
"""
