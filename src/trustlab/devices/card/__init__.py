"""Smart card device model: APDUs, the ISO 7816-3 / ISO 14443 link, RAM/NVM, primitives.

Layout (one job per module; the public API of each is in its docstring and is
kept stable for the AE study of issue 6 and the Java Card HBS work of issue 7):

- ``apdu``       ISO 7816-4 command/response APDUs, status words, command chaining
- ``link``       transmission time: contact (etu = F/(D·f), T=0/T=1) and contactless
- ``memory``     RAM and NVM with different per-byte write costs
- ``primitives`` block cipher / XOR / copy / shift / GF(2^128) multiply, counted and charged
- ``card``       the APDU-level card: handlers by INS, chaining, GET RESPONSE, status words
- ``platforms``  the paper's platforms (profile + cipher) by name

Example::

    from trustlab.timing import registry
    from trustlab.timing.clock import Clock
    from trustlab.devices.card import Card, ContactLink, CommandAPDU

    clock = Clock(registry.load("sle78-native"))
    card = Card(clock, ContactLink(F=512, D=8))
    card.register(0x10, lambda card, apdu: apdu.data[::-1])
    print(card.send(0x00, 0x10, 0, 0, b"hello"), clock.now_ms)
"""

from trustlab.devices.card.apdu import APDUError, CommandAPDU, ResponseAPDU, chain, sw_text
from trustlab.devices.card.card import Card
from trustlab.devices.card.link import ContactLink, ContactlessLink, contact_rates, contactless_rates
from trustlab.devices.card.memory import CardMemoryError, Memory
from trustlab.devices.card.primitives import CIPHERS, CardCrypto, cipher_component, component_names

__all__ = [
    "APDUError", "CommandAPDU", "ResponseAPDU", "chain", "sw_text", "Card", "ContactLink",
    "ContactlessLink", "contact_rates", "contactless_rates", "CardMemoryError", "Memory", "CIPHERS",
    "CardCrypto", "cipher_component", "component_names",
]
