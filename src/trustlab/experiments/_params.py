"""Typed parameters for programs that drive experiments (sweeps, the flagship).

An experiment declares its parameters once, with argparse. A sweep point is
the experiment's name plus a mapping ``{dest: value}``; this module turns the
mapping into the argv the experiment's own parser accepts, so values are
converted and validated by the same declaration a person uses on the command
line, and an unknown parameter is an error naming the ones that exist.
"""

from __future__ import annotations

import argparse
from typing import Any, Mapping

from trustlab.argtypes import SEED_MAX, count, real, seed  # noqa: F401 (re-exported)
from trustlab.errors import TrustlabError

_RESERVED = {"json", "save", "help"}


def parameters(name: str) -> dict[str, argparse.Action]:
    """The experiment's parameters by name (argparse ``dest``), excluding output flags."""
    from trustlab.experiments.registry import experiment_parser  # on use: the CLI's start imports this module

    parser = experiment_parser(name)
    return {a.dest: a for a in parser._actions if a.dest not in _RESERVED and a.dest != argparse.SUPPRESS}


def _flag(action: argparse.Action) -> str:
    longs = [o for o in action.option_strings if o.startswith("--")]
    return (longs or action.option_strings)[0]


def argv_from_params(name: str, params: Mapping[str, Any]) -> list[str]:
    """argv for experiment ``name`` from ``{parameter: value}``.

    ``True``/``False`` switch a flag on/off, a list fills an ``nargs`` option or
    repeats an ``append`` option, ``None`` leaves the default. Keys may use
    ``-`` or ``_`` (``fit-noise`` and ``fit_noise`` are the same parameter).
    """
    actions = parameters(name)
    positionals: list[str] = []
    argv: list[str] = []
    for key, value in params.items():
        pos, opts = fragment(name, actions, key, value)
        positionals += pos
        argv += opts
    return positionals + argv


def fragment(name: str, actions: Mapping[str, argparse.Action], key: str,
             value: Any) -> tuple[list[str], list[str]]:
    """One parameter's share of the argv: (positional words, option words).

    A sweep builds each distinct (parameter, value) fragment once and joins them per
    point, instead of converting every point's whole mapping again.
    """
    dest = key.replace("-", "_")
    action = actions.get(dest)
    if action is None:
        known = ", ".join(sorted(actions)) or "none"
        raise TrustlabError(f"experiment {name!r} has no parameter {key!r} (known: {known})")
    if value is None:
        return [], []
    if not action.option_strings:
        return [str(v) for v in (value if isinstance(value, list) else [value])], []
    flag = _flag(action)
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise TrustlabError(f"experiment {name!r}: parameter {key!r} is a switch; give true or false")
        # store_true: the flag sets True; store_false: the flag sets False
        return [], [flag] if value != action.default else []
    if isinstance(value, bool):
        raise TrustlabError(f"experiment {name!r}: parameter {key!r} takes a value, not {value}")
    if isinstance(value, (dict, list)) and any(isinstance(v, (dict, list)) for v in
                                               (value.values() if isinstance(value, dict) else value)):
        raise TrustlabError(f"experiment {name!r}: parameter {key!r} takes plain values, not nested tables or lists")
    if isinstance(value, dict):
        raise TrustlabError(f"experiment {name!r}: parameter {key!r} takes a value, not a table")
    if isinstance(value, list):
        if isinstance(action, argparse._AppendAction):
            return [], [f"{flag}={v}" for v in value]
        if action.nargs in ("*", "+") or isinstance(action.nargs, int):
            return [], [flag, *map(str, value)]
        raise TrustlabError(f"experiment {name!r}: parameter {key!r} takes one value, got a list")
    return [], [f"{flag}={value}"]  # '=' form: a value like -1e+16 is not taken for an option


def schema(name: str) -> list[dict[str, Any]]:
    """The parameters a sweep spec may set for experiment ``name``: name, flag, type, default, help."""
    out = []
    for dest, action in parameters(name).items():
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            kind = "bool"
        elif isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+"):
            kind = "list"
        else:
            kind = getattr(action.type, "__name__", None) or "str"
        default = action.default
        out.append({"name": dest, "flag": _flag(action) if action.option_strings else None, "type": kind,
                    "default": default if isinstance(default, (int, float, str, bool, list, type(None)))
                    else str(default),
                    "choices": list(action.choices) if action.choices else None, "help": action.help or ""})
    return out


def load_profile(flag: str, name: str, *components: str) -> Any:
    """The profile ``name`` (``registry.load``), with ``components`` required of it; an error names ``flag``.

    What an experiment's ``check`` and its run both call, so a sweep's dry run refuses a profile that does
    not exist, or cannot time what the run builds, in the words the run would use.
    """
    from trustlab.timing import registry
    from trustlab.timing.clock import Clock

    try:
        profile = registry.load(name)
        if components:
            Clock(profile).require(*components)
    except TrustlabError as exc:
        raise TrustlabError(str(exc) if str(exc).startswith(flag) else f"{flag}: {exc}") from None
    return profile


def comma_items(text: str, flag: str) -> list[str]:
    """``a, b`` -> ["a", "b"]; an empty list (``,``) or an empty item (``a,,b``) is an error naming ``flag``,
    not skipped (skipping turned ``--platform ,`` into a run over nothing that still "succeeded")."""
    items = [v.strip() for v in str(text).split(",")]
    if not any(items):
        raise TrustlabError(f"{flag}: empty list")
    if not all(items):
        raise TrustlabError(f"{flag} {text!r}: empty item in the list")
    return items


def name_list(text: str, flag: str = "--profile") -> list[str]:
    """``a,b`` -> ["a", "b"] (duplicates dropped); an empty list or an empty item is an error."""
    return list(dict.fromkeys(comma_items(text, flag)))
