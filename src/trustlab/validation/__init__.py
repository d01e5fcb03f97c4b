"""``trustlab validate``: every profile's accuracy, measured against references it was not built from.

Public API::

    run(profiles=None) -> Validation      every check and inconsistency (optionally for some profiles)
    Validation.accuracy() -> {profile: Accuracy}
    profile_accuracy(name) -> Accuracy | None

One module per reference source: :mod:`.mayes2017` (AE paper), :mod:`.vanderlaan2018`
(Java Card HBS), :mod:`.jcalgtest_javacard` (other JCOP cards), :mod:`.gunupudi2010` (TPM 1.2
timing model), :mod:`.raj2016` (fTPM), :mod:`.wolftpm` and :mod:`.jcalgtest` (TPM 2.0 raw data,
paired by :mod:`.tpm2_pairs`).
"""

from __future__ import annotations

from trustlab.validation.core import (CALIBRATION, DEVICE_CLASSES, INDEPENDENT, Accuracy, Check, Inconsistency,
                                      accuracy, device_class)
from trustlab.validation.run import Validation, profile_accuracy, run

__all__ = ["CALIBRATION", "DEVICE_CLASSES", "INDEPENDENT", "Accuracy", "Check", "Inconsistency", "Validation",
           "accuracy", "device_class", "profile_accuracy", "run"]
