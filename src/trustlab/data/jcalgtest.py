"""JCAlgTest CSV import: one profile per TPM or card file.

JCAlgTest publishes two kinds of performance files: TPM 2.0 command timings
(``TPM2_Create`` blocks with "operation stats (ms/op)") and Java Card
per-algorithm timings (files that start with the AlgTest applet banner). The
format is sniffed from the content, then handed to the matching parser.
"""

from __future__ import annotations

from pathlib import Path

from trustlab.errors import ProfileError
from trustlab.timing.profile import Profile


def sniff(path: Path) -> str:
    """``"tpm"`` or ``"javacard"``."""
    from trustlab import limits

    with limits.open_input(path, "JCAlgTest file", ProfileError) as fh:  # a regular file only (no FIFO, no device)
        try:  # only the head: a huge file must not be read whole to be told apart
            head = fh.read(80_000).decode("utf-8", errors="replace")[:20000]
        except OSError as exc:
            raise ProfileError(f"{limits.shown(path)}: cannot read: {exc.strerror}") from None
    if "AlgTest applet version" in head or "AlgTestJClient" in head or "Card ATR" in head:
        return "javacard"
    if "TPM2_" in head or "Manufacturer;" in head:
        return "tpm"
    raise ProfileError(f"{path}: not a JCAlgTest performance file (no TPM2_ command blocks, no AlgTest card header)")


def import_jcalgtest(path: Path, name: str | None = None) -> Profile:
    kind = sniff(path)
    if kind == "tpm":
        from trustlab.data.jcalgtest_tpm import parse_tpm_csv

        return parse_tpm_csv(path, name=name)
    from trustlab.data.jcalgtest_card import parse_card_csv

    return parse_card_csv(path, name=name)
