"""TPM 2.0: the real thing (swtpm/libtpms) behind a timing proxy.

Layout, one job per module:

- :mod:`.wire`     pure bytes-in/bytes-out framing (TPM 2.0 headers, swtpm
                   control codes, MS-simulator ``TPM_SEND_COMMAND`` frames)
- :mod:`.commands` TPM 2.0 command and response code tables
- :mod:`.swtpm`    start/stop/reset a swtpm process (``Swtpm`` context manager)
- :mod:`.objects`  which key algorithm sits behind which handle
- :mod:`.cost`     a command's modelled cost on a profile, from the wire
- :mod:`.proxy`    ``TimingProxy``: swtpm's TCP protocol in, held responses out
- :mod:`.harness`  the measurement suite over tpm2-pytss (``trustlab measure``)
"""
