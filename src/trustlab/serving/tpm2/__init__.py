"""The TPM 2.0 backend of the serving layer: swtpm (libtpms), a TCP TPM or a device node, behind a
resource manager with the Linux kernel tpmrm's rules."""
