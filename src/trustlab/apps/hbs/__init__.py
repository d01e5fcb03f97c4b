"""Hash-based signatures (WOTS+, XMSS, XMSS^MT per RFC 8391) on a Java Card.

The scheme code (params, address, hashes, wots, tree, keys) is pure RFC 8391;
``verify`` is an independent off-card verifier that reads only public data;
``applet`` is the stateful on-card signer with its persistent memory and APDU
interface, charging every primitive to a :class:`trustlab.timing.clock.Clock`;
``model`` turns operation counts measured from the applet into lifetime
time and memory figures for any (h, d, w).
"""

from trustlab.apps.hbs.params import XMSSParams

__all__ = ["XMSSParams"]
