"""The paper's test application as a card applet: AE over APDUs.

One command per mode: ``CLA=80 INS=A0 P1=<mode index> P2=00``, data = the
payload (chained when longer than 255 bytes), response = ciphertext || tag.
``INS=A2`` decrypts (data = ciphertext || tag) and answers ``6988`` when the
tag does not verify. The nonce is the mode's fixed demonstration nonce: the
paper excludes the key/nonce exchange from its measurements, and so do we.
"""

from __future__ import annotations

import warnings

from trustlab.apps.ae import NONCES, InsecureModeWarning, InvalidTag, make_mode
from trustlab.apps.ae.common import AEMode
from trustlab.devices.card.apdu import SW_SM_DATA_INCORRECT, SW_WRONG_LENGTH, SW_WRONG_P1P2, APDUError, CommandAPDU
from trustlab.devices.card.card import Card
from trustlab.devices.card.primitives import CardCrypto

CLA = 0x80
INS_ENCRYPT = 0xA0
INS_DECRYPT = 0xA2
MODE_ORDER = ("ocb2", "ocb3", "ccm", "etm", "gcm", "etm-iso")


class AEApplet:
    """Holds one keyed instance of each mode; key set-up happens at install (personalisation)."""

    def __init__(self, card: Card, crypto: CardCrypto, modes: tuple[str, ...] = MODE_ORDER) -> None:
        self.crypto = crypto
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureModeWarning)  # the experiment reports OCB2's status itself
            self.modes: dict[int, tuple[str, AEMode]] = {
                MODE_ORDER.index(m): (m, make_mode(m, crypto)) for m in modes}
        card.register(INS_ENCRYPT, self._encrypt)
        card.register(INS_DECRYPT, self._decrypt)

    def _mode(self, apdu: CommandAPDU) -> tuple[str, AEMode]:
        if apdu.p1 not in self.modes or apdu.p2:
            raise APDUError(SW_WRONG_P1P2, f"P1={apdu.p1:02X} P2={apdu.p2:02X} selects no loaded mode")
        return self.modes[apdu.p1]

    def _encrypt(self, card: Card, apdu: CommandAPDU) -> bytes:
        name, mode = self._mode(apdu)
        self.crypto.start_message()
        ct, tag = mode.encrypt(NONCES[name], apdu.data)
        return ct + tag

    def _decrypt(self, card: Card, apdu: CommandAPDU) -> bytes:
        name, mode = self._mode(apdu)
        if len(apdu.data) < mode.tag_len:
            raise APDUError(SW_WRONG_LENGTH, "shorter than the tag")
        ct, tag = apdu.data[:-mode.tag_len], apdu.data[-mode.tag_len:]
        self.crypto.start_message()
        try:
            return mode.decrypt(NONCES[name], ct, tag)
        except InvalidTag:
            raise APDUError(SW_SM_DATA_INCORRECT, "authentication failed") from None
