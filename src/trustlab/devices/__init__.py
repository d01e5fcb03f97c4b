"""Devices: TPM 1.2 engine, TPM 2.0 (swtpm behind a timing proxy), smart cards, fTPM.

A device charges its profile's components to a :class:`trustlab.timing.clock.Clock`
as it works; it knows nothing about the applications that use it.
"""
