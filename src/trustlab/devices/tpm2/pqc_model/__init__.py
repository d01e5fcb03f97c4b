"""A cost model for post-quantum operations (ML-KEM, ML-DSA) on TPM-class chips.

How a command is priced: count the work of the operation by running it
(:mod:`.mlkem`, :mod:`.mldsa`: FIPS 203 / 204 written out, Keccak from hashlib,
every unit tallied by :mod:`.tally`; ``data/op_counts.json`` keeps many runs), price
each unit in Cortex-M4 cycles from pqm4 (:mod:`.calibration`), turn cycles into
milliseconds with each chip's core class and clock, or its own measured SHA-256 rate
(:mod:`.classes`, :mod:`.chips`, ``data/chips.toml``, :mod:`.model` -> the ``<tpm2 profile>-pqc``
profiles under ``timing/profiles/pqc``), and add the bus (:mod:`.frames` sizes).

Modules, one job each:

- :mod:`.params`      FIPS 203 / 204 parameter sets and the byte sizes they imply
- :mod:`.tally`       unit counters; Keccak-f[1600] permutations from byte lengths and rates
- :mod:`.mlkem`, :mod:`.mldsa`   the counting implementations (ACVP- and cryptography-exact)
- :mod:`.counting`    one instrumented operation on seeded random inputs
- :mod:`.counts`      the shipped counts (tools/build_pqc_counts.py)
- :mod:`.calibration` Cortex-M4 cycles per unit from pqm4
- :mod:`.classes`     core classes (M0+/SC000, M3/SC300, M4, M33, A-class, RISC-V 32/64, x86, security
  controller): work per clock on Keccak and the other units, fitted on the published per-core
  measurements in ``trustlab/validation/data/pqc_measurements.toml`` (priors in ``data/cores.toml``)
- :mod:`.builds`      how a build (-O2/-O3, -Os, -O0, application, unknown) and a timer (cycle counter,
  wall clock, rdtsc) move a figure: factors from Embench-IoT and Intel ARK (``data/builds.toml``)
- :mod:`.chips`       processor / bus / I/O-buffer / certification facts per chip, with sources
- :mod:`.chipspec`    a chip described by its facts (``--chip core=...,mhz=...`` or a TOML file; a profile)
- :mod:`.keccak_engine`  a hardware Keccak engine beside the core (OpenTitan KMAC, or cycles per permutation
  as given): what the counted Keccak permutations and sponge calls cost the CPU (``data/chips.toml``)
- :mod:`.estimate`    an operation's time from the chip's facts: speed, implementation and protection factors,
  key creation's extra work, the bus, the provenance (used by predict, cost and model alike)
- :mod:`.predict`     ``price(algorithm, operation, chip_or_profile) -> Price(median_ms, low_ms, high_ms,
  provenance)``: the pricing API for anything (issue 25's workload replay reuses it); intervals from
  every assumption's range; protection of secret-key operations on certified chips; key creation =
  keygen + FIPS 140-3 pairwise consistency test + wrapping
- :mod:`.silicon`     chips with published 1.85 figures (SEALSQ QVault): the figures (predict prices them)
- :mod:`.model`       a chip's unit costs as a ``pqc`` profile (tools/build_pqc_profiles.py)
- :mod:`.cost`        ``operation_cost(profile, algorithm, operation, ...)``: component -> ms
  (the pricing API the TPM 2.0 PQC command handlers call)
- :mod:`.frames`      bytes on the wire of the 1.85 commands
- :mod:`.ram`         peak RAM per operation (pqm4) and what chips state
- :mod:`.assumptions` every assumption with its range and source (``trustlab validate`` prints it)
- :mod:`.validation`  the model beside published figures: leave-one-source-out with intervals and
  coverage (independent), pqm4 and the SEALSQ figures (calibration)
"""
