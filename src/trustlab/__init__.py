"""trustlab: a what-if laboratory for trusted hardware.

Layers (data flows one way, nothing below knows what is above):
``timing`` -> ``devices`` -> ``apps`` -> ``experiments``.
"""

__version__ = "0.1.0"
