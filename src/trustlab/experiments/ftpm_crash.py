"""``trustlab run ftpm-crash``: power loss at every frame of an fTPM workload.

Runs a seeded workload of TPM 2.0 commands on the firmware-TPM model (RPMB
storage with shadow blocks and a bit vector, secure clock, dark-period dirty
bit), cuts power at every crash point of every command -- before each frame on
the eMMC bus and halfway through it -- reboots, and classifies what the TEE
recovers; then the OS replays every write request it captured. The paper
(fTPM, USENIX Security 2016, Sec. 9.1) claims atomicity and replay protection
but publishes no numbers, so there is no reference figure: the expected
result is ``torn = lost_committed = rollbacks_accepted = 0``.

``--boots N`` adds the dark-period study (Sec. 8.2): the lockout rate of
legitimate users and the guesses an attacker gets, for the naive TPM without
storage, the paper's dirty bit and the TPM 2.0 specification's non-orderly rule.
"""

from __future__ import annotations

import argparse

from trustlab.textable import table
from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.devices.ftpm.atomic_store import capacity
from trustlab.devices.ftpm.crash import run_campaign
from trustlab.devices.ftpm.platform import STORAGE_COMPONENTS
from trustlab.devices.ftpm.usability import BootMix, compare
from trustlab.errors import TrustlabError
from trustlab.experiments._params import count, load_profile, seed
from trustlab.experiments.registry import Reference, Result, experiment
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a probability is between 0 and 1, got {text!r}")
    return value


# the boot simulation's odds when --boots is given without them
BOOT_DEFAULTS = {"p_typo": 0.1, "p_dark_reboot": 0.02, "p_unclean": 0.05}


def select(args: argparse.Namespace) -> Profile:
    """The storage profile a run times, every parameter checked: the experiment's ``check`` (a sweep's dry run)
    and the start of its run are this one function."""
    if args.boots < 0:
        raise TrustlabError(f"--boots must not be negative, got {args.boots}")
    for name in BOOT_DEFAULTS:
        if getattr(args, name) is not None and not args.boots:
            raise TrustlabError(f"--{name.replace('_', '-')}: applies only with --boots N (it sets the boot "
                                "simulation's odds); add --boots or drop it")
    return load_profile("--profile", args.profile, *STORAGE_COMPONENTS)  # it exists and can time the storage


@experiment("ftpm-crash", help="fTPM on RPMB under injected power loss at every frame boundary and mid-frame, "
            "replayed frames, and (with --boots) reboots in dark periods (fTPM paper Sec. 8-9)")
class FtpmCrashExperiment:
    flagship = [
        ["--commands", "120", "--seed", "1"],
        ["--commands", "40", "--seed", "2", "--levels", "2"],
        ["--commands", "10", "--seed", "1", "--boots", "300"],
    ]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--commands", type=count(1, 100_000, "--commands"), default=200, metavar="N",
                            help="workload length; every crash point of every command is tried (default 200)")
        parser.add_argument("--seed", type=seed, default=0)
        parser.add_argument("--profile", default=DEFAULT_STORAGE_PROFILE,
                            help=f"eMMC RPMB storage cost profile (default {DEFAULT_STORAGE_PROFILE})")
        parser.add_argument("--levels", type=int, choices=(1, 2), default=1,
                            help="bit-vector levels of the atomic store (2 = the extra indirection)")
        parser.add_argument("--boots", type=count(0, 10_000_000, "--boots"), default=0, metavar="N",
                            help="also simulate N boots per dark-period policy (usability vs attack)")
        # default None, resolved in run: a probability given without --boots is an error, not ignored
        parser.add_argument("--p-typo", type=_probability, default=None,
                            help=f"with --boots: P(first PIN entry wrong) (default {BOOT_DEFAULTS['p_typo']})")
        parser.add_argument("--p-dark-reboot", type=_probability, default=None,
                            help=f"with --boots: P(reboot inside the dark period) (default {BOOT_DEFAULTS['p_dark_reboot']})")
        parser.add_argument("--p-unclean", type=_probability, default=None,
                            help=f"with --boots: P(power cut instead of TPM2_Shutdown) (default {BOOT_DEFAULTS['p_unclean']})")

    def check(self, args: argparse.Namespace) -> None:
        """--boots' range, the boot odds only with --boots, and the profile (the registry runs this before a run
        and on every sweep point; the run starts with it too)."""
        select(args)

    def run(self, args: argparse.Namespace) -> Result:
        profile = select(args)
        for name, default in BOOT_DEFAULTS.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
        clock = Clock(profile, seed=args.seed)
        report = run_campaign(args.commands, args.seed, clock=clock, levels=args.levels)
        data: dict = report.headline()
        rows = [[k, v] for k, v in data.items()]
        text = [f"fTPM crash campaign: {args.commands} commands, seed {args.seed}, {args.levels}-level bit vector, "
                f"{report.replays_attempted} replayed write requests, {report.frames_written} RPMB frames "
                f"committed by the workload ({report.frames_written * profile.mean('rpmb_frame_write') / 1000:.1f} s "
                f"of eMMC writes at {profile.mean('rpmb_frame_write')} ms/frame, {profile.name})",
                table(rows, ["outcome", "count"]), "",
                table(sorted(report.points_by_label.items()), ["crash point", "count"])]
        plots = [{"kind": "bar", "title": "Recovered state after power loss", "xlabel": "outcome",
                  "ylabel": "crash points", "logx": False, "logy": False,
                  "series": [{"label": f"{args.commands} commands",
                              "x": ["old", "new", "torn", "lost", "replay accepted"],
                              "y": [report.recovered_old, report.recovered_new, report.torn,
                                    report.lost_committed, report.rollbacks_accepted]}]}]
        if args.boots:
            mix = BootMix(p_typo=args.p_typo, p_dark_reboot=args.p_dark_reboot, p_unclean=args.p_unclean)
            outcomes = compare(args.boots, mix, seed=args.seed, clock=Clock(profile, seed=args.seed))
            data = dict(data, dark_periods=[o.as_dict() for o in outcomes])
            text += ["", f"Dark periods over {args.boots} boots (P(typo)={mix.p_typo}, "
                     f"P(reboot in dark)={mix.p_dark_reboot}, P(unclean)={mix.p_unclean}, max tries {mix.max_tries}):",
                     table([[o.policy, o.lockout_boots, o.lockout_rate, o.dark_reboots,
                             f"{o.attacker_guesses} in {o.attacker_boots} boots"] for o in outcomes],
                           ["policy", "user lockouts", "rate", "dark reboots", "attacker wrong guesses"])]
            plots.append({"kind": "bar", "title": "Legitimate-user lockout rate by dark-period rule",
                          "xlabel": "policy", "ylabel": "boots with lockout (fraction)", "logx": False,
                          "logy": False, "series": [{"label": "lockout rate", "x": [o.policy for o in outcomes],
                                                     "y": [o.lockout_rate for o in outcomes]}]})
        direct, two = capacity(1), capacity(2)
        references = [
            Reference(label="RPMB partition addressable by one bit-vector block", reference=256.0,
                      model=direct.physical_blocks * 256 / 1024, unit="KB",
                      source="fTPM paper Sec. 9.1 ('limits the size of the RPMB partition to 256KB'); model: "
                             f"{direct.logical_blocks} bits after a {256 - direct.logical_blocks // 8}-byte header, "
                             "two copies per block"),
            Reference(label="blocks addressable with one extra level of indirection", reference=1_048_576.0,
                      model=float(two.logical_blocks), unit="blocks",
                      source="fTPM paper Sec. 9.1 ('256*8*256*8 = 1,048,576 blocks'; the product is 4,194,304); "
                             f"the 16-bit RPMB address field allows only {two.address_limited_blocks} of them"),
        ]
        return Result(experiment="ftpm-crash",
                      params={"commands": args.commands, "seed": args.seed, "profile": profile.name,
                              "levels": args.levels,
                              "boots": args.boots},
                      data=data, text="\n".join(text), references=references,
                      profiles={profile.name: profile.provenance.describe()}, plots=plots,
                      violations=[f"{n} {what}" for n, what in ((report.torn, "torn writes"),
                                                                (report.lost_committed, "committed writes lost"),
                                                                (report.rollbacks_accepted, "rollbacks accepted"))
                                  if n])
