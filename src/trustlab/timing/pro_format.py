"""The 2010 paper's own profile text format (``overconst: 19.225`` ...).

Kept so that profiles can travel between trustlab and the original
timing-accurate TPM emulator extensions. Several ``key: value`` pairs may share
one line (the paper's own listing does this); ``#`` starts a comment.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from trustlab.errors import ProfileError, excerpt
from trustlab.timing.profile import Component, Profile, Provenance, read_profile_text

PRO_KEYS: dict[str, tuple[str, str]] = {
    "overconst": ("ohc", "call"),
    "overinrate": ("ohir", "byte"),
    "overoutrate": ("ohor", "byte"),
    "decrypt": ("rsa_dec", "call"),
    "encrypt": ("rsa_enc", "call"),
    "sign": ("rsa_sign", "call"),
    "hashrate": ("sha1_byte", "byte"),
}
"""Paper keyword -> (trustlab component, unit)."""

_PAIR = re.compile(r"([A-Za-z_]+)\s*:\s*(\S+)")
MAX_LINE = 4096  # characters of one line; the pair search backtracks, so a 3 MB line took minutes


def parse_pro(text: str, *, name: str, origin: str) -> Profile:
    """Parse ``.pro`` text; ``origin`` names the file in error messages."""
    components: dict[str, Component] = {}
    seen_line: dict[str, int] = {}
    description = ""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if len(raw) > MAX_LINE:
            raise ProfileError(f"{origin}:{lineno}: line longer than {MAX_LINE} characters ({len(raw)})")
        body, _, comment = raw.partition("#")
        if not body.strip():
            if comment.strip() and not description:
                description = comment.strip()
            continue
        pos = 0
        stripped = body.strip()
        for match in _PAIR.finditer(stripped):
            if stripped[pos:match.start()].strip():
                raise ProfileError(f"{origin}:{lineno}: cannot parse {excerpt(stripped[pos:match.start()].strip())}")
            pos = match.end()
            key, value = match.group(1).lower(), match.group(2)
            if key not in PRO_KEYS:
                raise ProfileError(
                    f"{origin}:{lineno}: unknown key {excerpt(key)} (expected one of {', '.join(PRO_KEYS)})"
                )
            if key in seen_line:
                raise ProfileError(f"{origin}:{lineno}: {key!r} repeated (first on line {seen_line[key]})")
            try:
                number = float(value)
            except ValueError:
                raise ProfileError(f"{origin}:{lineno}: {key} must be a number, got {excerpt(value)}") from None
            if not math.isfinite(number) or number < 0:
                raise ProfileError(f"{origin}:{lineno}: {key} must be a non-negative number, got {excerpt(value)}")
            component, unit = PRO_KEYS[key]
            seen_line[key] = lineno
            components[component] = Component(
                name=component, mean=number, unit=unit,
                provenance=Provenance(source=origin, note=f"line {lineno}, {key}"),
            )
        if stripped[pos:].strip():
            raise ProfileError(f"{origin}:{lineno}: cannot parse {excerpt(stripped[pos:].strip())}")
    missing = [k for k in PRO_KEYS if k not in seen_line]
    if missing:
        raise ProfileError(f"{origin}: missing key(s) {', '.join(missing)}")
    return Profile(
        name=name, components=components, family="tpm1.2", description=description,
        provenance=Provenance(source=origin, note="imported from .pro format"),
    )


def load_pro(path: Path, name: str | None = None) -> Profile:
    return parse_pro(read_profile_text(path), name=name or path.stem, origin=str(path))


def export_pro(profile: Profile) -> str:
    """Render a TPM 1.2 profile in the paper's format (full precision)."""
    lines = [f"# {profile.name} (exported by trustlab)"]
    if profile.description:
        lines.append(f"# {profile.description}")
    for key, (component, _unit) in PRO_KEYS.items():
        lines.append(f"{key}: {profile.mean(component)!r}")
    return "\n".join(lines) + "\n"
