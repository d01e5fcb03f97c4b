"""A cost model for post-quantum operations (ML-KEM, ML-DSA) on TPM-class chips.

Modules, one job each:

- :mod:`.params`  FIPS 203 / FIPS 204 parameter sets and the byte sizes they imply
- :mod:`.cost`    ``operation_cost(profile, algorithm, operation, ...)``: component -> ms
  (the pricing API the TPM 2.0 PQC command handlers call)
"""
