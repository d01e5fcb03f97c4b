"""TPM 2.0: the real thing (swtpm/libtpms) behind a timing proxy.

Layout, one job per module:

- :mod:`.wire`     pure bytes-in/bytes-out framing (TPM 2.0 headers, swtpm
                   control codes, MS-simulator ``TPM_SEND_COMMAND`` frames)
- :mod:`.commands` TPM 2.0 command and response code tables
- :mod:`.swtpm`    start/stop/reset a swtpm process (``Swtpm`` context manager)
- :mod:`.objects`  which key algorithm sits behind which handle
- :mod:`.cost`     a command's modelled cost on a profile, from the wire
- :mod:`.proxy`    ``TimingProxy``: swtpm's TCP protocol in, held responses out
- :mod:`.backend`  where commands run: swtpm / tcp:HOST:PORT / device:/dev/tpmrm0
- :mod:`.harness`  the measurement suite over tpm2-pytss (``trustlab measure``)
- :mod:`.profiling` measure + fit -> profile (how ``swtpm-native`` was made)

For other parts of trustlab (stable API)::

    from trustlab.devices.tpm2.proxy import TimingProxy, timed_swtpm
    from trustlab.devices.tpm2.swtpm import Swtpm

    with timed_swtpm("nuvoton-npct750-wolftpm", virtual=True) as proxy:   # fresh swtpm + proxy
        esys = ESAPI(TCTILdr("swtpm", proxy.tcti_conf))
        ...
        proxy.clock.now_ms, proxy.records                               # modelled time, per-command trace
        proxy.reset()                                                    # power cycle between runs

swtpm serves one data connection at a time and the proxy keeps it open, so
while a proxy fronts a swtpm, talk to the TPM through the proxy.
"""
