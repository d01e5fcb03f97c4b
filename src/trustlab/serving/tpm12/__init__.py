"""The TPM 1.2 backend of the serving layer: trustlab's own TPM 1.2 engine served in-process, and a TPM 1.2
reached over swtpm's protocol (``SocketTpm12``; libtpms' TPM 1.2 as ``Swtpm12``)."""
