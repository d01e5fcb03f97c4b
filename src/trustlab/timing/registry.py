"""Finding profiles by name: shipped ones, the user's own, or a file path.

Shipped profiles are TOML files anywhere under ``trustlab/timing/profiles``
(subfolders group them by family). Imported profiles go to the user's profile
directory, ``$TRUSTLAB_HOME/profiles`` (default ``~/.local/share/trustlab``), so
that an import never writes into the installed package.

Listing profiles must not parse them all (65 files, about 5 MB of TOML, 2 s):
:func:`summaries` reads a small index (name, family, version, description,
source, component names and units per file) from the cache directory,
``$TRUSTLAB_HOME/cache`` (default ``~/.cache/trustlab``), and re-parses only
the files whose modification time or size changed. If the cache cannot be
written, everything still works, just without it.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from trustlab import limits
from trustlab.errors import ProfileError, TrustlabError, excerpt
from trustlab.timing.pro_format import load_pro
from trustlab.safe_output import write_text
from trustlab.timing.profile import Profile, load_toml

SHIPPED_DIR = Path(str(resources.files("trustlab.timing") / "profiles"))


def user_dir() -> Path:
    home = os.environ.get("TRUSTLAB_HOME")
    base = Path(home) if home else Path.home() / ".local" / "share" / "trustlab"
    return base / "profiles"


def cache_dir() -> Path:
    """Where derived, re-creatable files go: ``$TRUSTLAB_HOME/cache`` or ``~/.cache/trustlab``."""
    home = os.environ.get("TRUSTLAB_HOME")
    if home:
        return Path(home) / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "trustlab"


@functools.cache
def _shipped_index() -> dict[str, Path]:
    index: dict[str, Path] = {}
    for path in sorted(SHIPPED_DIR.rglob("*.toml")):
        if path.stem in index:
            raise ProfileError(f"two shipped profiles named {path.stem!r}: {index[path.stem]} and {path}")
        index[path.stem] = path
    return index


def _user_index() -> dict[str, Path]:
    d = user_dir()
    return {p.stem: p for p in sorted(d.glob("*.toml"))} if d.is_dir() else {}


def available() -> dict[str, Path]:
    """Every profile name a user can pass to ``--profile``; user ones shadow nothing."""
    index = dict(_user_index())
    index.update(_shipped_index())
    return index


UNREADABLE = "(unreadable)"
_FAMILY_LINE = re.compile(r'^family\s*=\s*"([^"]*)"\s*$', re.MULTILINE)


def family_of(name: str) -> str:
    """A profile's family without parsing the whole file (some hold ~800 components).

    A user profile that cannot be read has family ``"(unreadable)"``: one broken
    file must not hide every other profile.
    """
    path = available()[name]
    try:
        with limits.open_input(path, "profile", ProfileError) as fh:  # a FIFO in the profile directory must not hang
            head = fh.read(4096).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError, ProfileError):
        return UNREADABLE
    header = head.split("\n[", 1)[0]  # top-level keys come before the first table
    match = _FAMILY_LINE.search(header)
    if match:
        return match.group(1)
    try:
        return load(name).family
    except ProfileError:
        return UNREADABLE


def names(family: str | None = None) -> list[str]:
    return [n for n in sorted(available()) if family is None or family_of(n) == family]


def families() -> list[str]:
    return sorted({family_of(n) for n in available()} - {UNREADABLE})


@functools.cache
def _load_shipped(name: str) -> Profile:
    return load_toml(_shipped_index()[name])


def load(name_or_path: str) -> Profile:
    """A shipped or user profile by name, or a ``.toml`` / ``.pro`` file by path."""
    if name_or_path in _shipped_index():
        return _load_shipped(name_or_path)
    user = _user_index()
    if name_or_path in user:
        return load_toml(user[name_or_path])
    path = Path(name_or_path)
    if path.suffix in (".toml", ".pro") or os.sep in name_or_path:
        try:
            exists = path.exists()
        except OSError as exc:  # a name too long, a loop of links
            raise ProfileError(f"{limits.shown(path)}: cannot read profile ({exc.strerror or exc})") from None
        if not exists:
            raise ProfileError(f"{limits.shown(path)}: no such profile file")
        return load_pro(path) if path.suffix == ".pro" else load_toml(path)
    close = difflib.get_close_matches(name_or_path, list(available()), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise ProfileError(f"unknown profile {excerpt(name_or_path)} ({hint}see 'trustlab profiles list', "
                       "or give a .toml/.pro path)")


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> str:
    """A profile name is also a file name: refuse anything that could escape the directory."""
    if not _SAFE_NAME.fullmatch(name) or name.endswith((".toml", ".pro")):
        raise ProfileError(f"invalid profile name {excerpt(name)}: use letters, digits, '.', '_' and '-' "
                           "(starting with a letter or digit, no extension)")
    return name


def install(profile: Profile) -> Path:
    """Save a profile into the user's profile directory under its own name."""
    check_name(profile.name)
    if profile.name in _shipped_index():
        raise ProfileError(f"{profile.name!r} is a shipped profile; choose another --name")
    d = user_dir()
    path = d / f"{profile.name}.toml"
    try:  # atomic: an interrupted import (or a full disk) never leaves half a profile or a temp file
        d.mkdir(parents=True, exist_ok=True)
        write_text(path, profile.to_toml())
    except OSError as exc:
        raise ProfileError(f"{path}: cannot write profile (TRUSTLAB_HOME={os.environ.get('TRUSTLAB_HOME', '')!r}): "
                           f"{exc.strerror or exc}") from None
    return path


# ---- the profile index --------------------------------------------------------------------

INDEX_FILE = "profile-index.json"
INDEX_VERSION = 1


@dataclass(frozen=True)
class Summary:
    """What listing a profile needs, without its components' figures."""

    name: str
    family: str
    version: str
    description: str
    source: str
    components: dict[str, str]  # component name -> unit

    @classmethod
    def of(cls, name: str, profile: Profile) -> "Summary":
        return cls(name, profile.family, profile.version, profile.description, profile.provenance.describe(),
                   {c.name: c.unit for c in profile.components.values()})


def _read_index(path: Path) -> dict:
    try:
        data = json.loads(limits.read_text(path, "profile index", limits.MAX_RECORD_BYTES))
    except (TrustlabError, ValueError):  # unreadable, a FIFO, too large: parse again
        return {}
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def _write_index(path: Path, files: dict) -> None:
    """Atomically, or not at all (a read-only home is fine: the next run parses again)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".profile-index.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": INDEX_VERSION, "files": files}, fh)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def summaries(family: str | None = None) -> tuple[list[Summary], list[str]]:
    """Summaries of every available profile (of ``family``), and the errors of unreadable ones.

    Cached per file by (path, modification time, size), so an edited or
    replaced profile is re-read and a deleted one drops out.
    """
    index_path = cache_dir() / INDEX_FILE
    cached = _read_index(index_path)
    files: dict[str, dict] = {}
    out: list[Summary] = []
    broken: list[str] = []
    for name, path in sorted(available().items()):
        try:
            st = path.stat()
        except OSError as exc:
            broken.append(f"{path}: {exc.strerror or exc}")
            continue
        key, stamp = str(path), [st.st_mtime_ns, st.st_size]
        entry = cached.get(key)
        summary = None
        if isinstance(entry, dict) and entry.get("stamp") == stamp:
            try:
                summary = Summary(**entry["summary"])
            except (TypeError, KeyError):
                summary = None
        if summary is None or summary.name != name:
            try:
                summary = Summary.of(name, load(name))
            except ProfileError as exc:  # one bad user file must not hide the rest
                broken.append(str(exc))
                continue
        files[key] = {"stamp": stamp, "summary": asdict(summary)}
        if family is None or summary.family == family:
            out.append(summary)
    if files != cached:
        _write_index(index_path, files)
    return out, broken
