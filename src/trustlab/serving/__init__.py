"""Serving: a TPM on a socket, as slow as a real chip, for unmodified clients (``trustlab serve``).

One transport layer serves both TPM generations; what differs is the backend
beneath it. Layout, one job per module:

- :mod:`.wire`       the transports' framings, bytes in / events out: swtpm's raw
                     data port, the MS simulator's ``TPM_SEND_COMMAND``, swtpm's
                     control channel
- :mod:`.frontend`   the sockets: one event-loop thread that reads, queues, runs, holds
- :mod:`.realtime`   the realtime hold: precise sleeping, SCHED_FIFO while waiting
- :mod:`.proxy`      ``TimingProxy``, generation-blind: clients, the hold, the ledger, the
                     trace record; the control plane's policy
- :mod:`.path`       the contract of a generation's command path (hook, resource manager,
                     backend, pricing for TPM 2.0: :mod:`.tpm2.path`; the engine: :mod:`.tpm12.path`)
- :mod:`.trace`      the ``--trace`` record and its writer (one JSON line per command)
- :mod:`.peers`      which local process is behind a connection (a client's space)
- :mod:`.swtpm`      start/stop/reset a swtpm process (``Swtpm``)
- :mod:`.backend`    the contract every backend follows
- :mod:`.tpm2`       the TPM 2.0 backend: swtpm / tcp / device, and the resource manager
                     with the kernel tpmrm's rules
- :mod:`.tpm12`      the TPM 1.2 backend: trustlab's own engine in-process, and a
                     TPM 1.2 reached over the wire (``SocketTpm12``, libtpms' ``Swtpm12``)

Neither generation's package imports the other's. For other parts of trustlab::

    from trustlab.serving.proxy import TimingProxy, timed_swtpm
    from trustlab.serving.swtpm import Swtpm

    with timed_swtpm("nuvoton-npct750-wolftpm", virtual=True) as proxy:   # fresh swtpm + proxy
        esys = ESAPI(TCTILdr("swtpm", proxy.tcti_conf))
        proxy.clock.now_ms, proxy.records                               # modelled time, per-command trace
        proxy.reset()                                                    # power cycle between runs

swtpm serves one data connection at a time and the proxy keeps it open, so
while a proxy fronts a swtpm, talk to the TPM through the proxy.
"""
