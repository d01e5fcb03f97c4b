"""TPM 2.0: the real thing (swtpm/libtpms), modelled and measured.

Layout, one job per module:

- :mod:`.wire`     TPM 2.0 command/response frames: build a command, read a code
- :mod:`.commands` TPM 2.0 command and response code tables
- :mod:`.objects`  which key algorithm sits behind which handle
- :mod:`.cost`     a command's modelled cost on a profile, from the wire
- :mod:`.extensions` what-if commands (the PQC ones) plugged into the served TPM
- :mod:`.harness`  the measurement suite over tpm2-pytss (``trustlab measure``)
- :mod:`.profiling` measure + fit -> profile (how ``swtpm-native`` was made)

Serving a TPM 2.0 to clients (the timing proxy, swtpm processes, the resource
manager) is :mod:`trustlab.serving`'s job::

    from trustlab.serving.proxy import TimingProxy, timed_swtpm
    from trustlab.serving.swtpm import Swtpm
"""
