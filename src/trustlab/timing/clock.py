"""Virtual time with a ledger, and the paper's realtime mode as a mode of it.

Every device charges named profile components to a :class:`Clock`; the clock
turns counts into milliseconds and remembers who charged what. In *virtual*
mode nothing sleeps, so a simulation runs as fast as the host's crypto allows.
In *realtime* mode a command accumulates its modelled cost and, when it ends,
sleeps once for ``modelled - actually elapsed`` (sleeping per charge fails: the
emulators hash single bytes, and thousands of microsecond sleeps overshoot).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from trustlab.errors import ProfileError
from trustlab.timing.profile import Component, Profile

NO_COMMAND = "(outside commands)"


@dataclass(slots=True)  # (slots: one is built per command; no per-instance dict)
class CommandRecord:
    """One completed (or running) command: its modelled cost and breakdown."""

    name: str
    start_ms: float
    ms: float = 0.0
    breakdown: dict[str, float] = field(default_factory=dict)
    wall_ms: float = 0.0
    slept_ms: float = 0.0


class Clock:
    """Virtual time driven by a profile.

    ``seed`` makes spreads reproducible: two clocks with the same profile and
    seed charged the same sequence report the same times.
    """

    def __init__(
        self,
        profile: Profile,
        *,
        seed: int = 0,
        realtime: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        wallclock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._profile = profile
        self.components = profile.components  # ("name in clock.components": a membership test without a call)
        # per-unit cost of every component without a spread: charging it draws nothing
        self._fixed = {name: c.mean for name, c in profile.components.items() if c.deterministic}
        self.realtime = realtime
        self.now_ms = 0.0
        self._seed = seed
        self._rng: random.Random | None = None  # seeded at the first draw (most profiles never draw)
        self._sleep = sleep
        self._wallclock = wallclock
        self._stack: list[CommandRecord] = []
        self._started: list[float] = []  # wallclock at each open command's start, parallel to _stack
        self.by_component: dict[str, float] = defaultdict(float)
        self.by_command: dict[str, float] = defaultdict(float)
        self.command_counts: dict[str, int] = defaultdict(int)
        self.by_command_component: dict[tuple[str, str], float] = defaultdict(float)
        self.last: CommandRecord | None = None

    @property
    def profile(self) -> Profile:
        """The profile this clock charges (fixed for the clock's life: devices cache its fixed costs)."""
        return self._profile

    def fixed_cost(self, component: str) -> float | None:
        """The per-unit ms of a component without a spread (charging it draws nothing), else None.

        A hot path may charge ``charge_ms(component, count * fixed_cost(component))``
        instead of ``charge(component, count)`` (a positive count): the same
        product, the same ledger entries, one call less. A component with a
        spread must go through :meth:`charge`, which draws.
        """
        return self._fixed.get(component)

    # ---- charging ---------------------------------------------------------

    def cost(self, component: str) -> float:
        """One draw of a component's per-unit cost (its mean if deterministic)."""
        return self._draw(self.profile[component])

    def _draw(self, c: Component) -> float:
        if c.samples:
            return self._random().choice(c.samples)
        if c.sd:
            return max(0.0, self._random().gauss(c.mean, c.sd))
        return c.mean

    def _random(self) -> random.Random:
        """The clock's generator, seeded on first use: the same draws as seeding it up front."""
        rng = self._rng
        if rng is None:
            rng = self._rng = random.Random(self._seed)
        return rng

    def charge(self, component: str, count: float = 1.0) -> float:
        """Advance time by ``count`` units of ``component``; returns the ms charged."""
        if count <= 0:
            if count < 0:
                raise ValueError(f"cannot charge a negative count ({count}) of {component!r}")
            return 0.0
        mean = self._fixed.get(component)  # the same value _draw returns for a component without spread
        ms = count * (self._draw(self.profile[component]) if mean is None else mean)
        self.charge_ms(component, ms)
        return ms

    def charge_ms(self, component: str, ms: float) -> None:
        """Advance time by an already computed amount attributed to ``component``."""
        stack = self._stack
        if stack:
            self._book(stack[-1], component, ms)
        else:
            self.now_ms += ms
            self.by_component[component] += ms
            self.by_command_component[(NO_COMMAND, component)] += ms
            self.by_command[NO_COMMAND] += ms

    def _book(self, record: CommandRecord, component: str, ms: float) -> None:
        """Add ``ms`` of ``component`` to the ledger inside the open command ``record`` (the innermost):
        the clock's time, the component's total, the (command, component) pair, the command's total
        and its breakdown, in that order. Every charging method makes it here, except the
        dispatcher's fused :meth:`begin_charged` / :meth:`end_charged`, which write the same
        additions out (two of them each, on every command: the calls were about a fifth of the
        ledger's bytecode), so a charge gives the same ledger to the last bit whichever method
        made it (tests/timing/test_clock.py holds the fused and the separate calls equal).
        """
        self.now_ms += ms
        self.by_component[component] += ms
        self.by_command_component[record.name, component] += ms
        record.ms += ms
        breakdown = record.breakdown
        breakdown[component] = breakdown.get(component, 0.0) + ms

    def charge_all(self, counts: dict[str, float]) -> None:
        """:meth:`charge` each ``component: count`` in order (a served command's priced terms, in one call)."""
        stack = self._stack
        if not stack:
            for component, count in counts.items():
                self.charge(component, count)
            return
        fixed, book, top = self._fixed, self._book, stack[-1]  # inside a command: every served one
        for component, count in counts.items():
            if count <= 0:
                if count < 0:
                    raise ValueError(f"cannot charge a negative count ({count}) of {component!r}")
                continue
            mean = fixed.get(component)
            book(top, component, count * (self._draw(self._profile[component]) if mean is None else mean))

    def charge_all_ms(self, breakdown: dict[str, float]) -> None:
        """:meth:`charge_ms` each ``component: ms`` in order (a device's whole breakdown, in one call).

        The same additions in the same order as one call per component, so the
        same totals to the last bit.
        """
        stack = self._stack
        if not stack:
            for component, ms in breakdown.items():
                self.charge_ms(component, ms)
            return
        book, top = self._book, stack[-1]
        for component, ms in breakdown.items():
            book(top, component, ms)

    def require(self, *components: str) -> None:
        """Fail early, naming the component, if the profile cannot time a device."""
        missing = [c for c in components if c not in self.profile]
        if missing:
            raise ProfileError(
                f"profile {self.profile.name!r} lacks component(s) {', '.join(missing)} needed here"
            )

    # ---- commands ---------------------------------------------------------

    @contextmanager
    def command(self, name: str) -> Iterator[CommandRecord]:
        """Attribute charges to ``name``; in realtime mode, return only when due.

        Nested commands (a command executed inside a transport session) are
        charged to the innermost one and also count towards their parent.
        """
        record = self.begin(name)
        try:
            yield record
        finally:
            self.end()

    def begin(self, name: str) -> CommandRecord:
        """Open a command (what :meth:`command` does on entry); every ``begin`` needs its :meth:`end`.

        For hot paths that cannot afford a generator context manager per
        command (a device's dispatcher): ``record = clock.begin(name); try: ...
        finally: clock.end()``.
        """
        record = CommandRecord(name, self.now_ms, 0.0, {})
        self._started.append(self._wallclock())
        self._stack.append(record)
        return record

    def begin_charged(self, name: str, first: str, first_ms: float, second: str, second_ms: float) -> None:
        """:meth:`begin` then ``charge_ms(first, first_ms)`` and ``charge_ms(second, second_ms)``, in one call.

        A dispatcher's opening charges (``ohc``, then ``ohir`` for the request's
        bytes): the same additions in the same order as the three calls, so the
        same ledger to the last bit (tests/timing); ``first`` and ``second`` may
        be the same component (its two amounts add up, as two calls would).
        """
        # (begin's lines, then _book's additions written out: every command opens here, and the
        # calls were a fifth of the ledger's work; the same additions in the same order, per total)
        now = self.now_ms
        record = CommandRecord(name, now, 0.0, {})
        self._started.append(self._wallclock())
        self._stack.append(record)
        by_component, by_pair = self.by_component, self.by_command_component
        by_component[first] += first_ms
        by_pair[name, first] += first_ms
        ms = 0.0 + first_ms
        breakdown = record.breakdown
        breakdown[first] = 0.0 + first_ms
        by_component[second] += second_ms
        by_pair[name, second] += second_ms
        record.ms = ms + second_ms
        breakdown[second] = breakdown.get(second, 0.0) + second_ms
        self.now_ms = now + first_ms + second_ms

    def end_charged(self, first: str | None, first_ms: float, second: str, second_ms: float) -> CommandRecord:
        """``charge_ms(first, first_ms)`` (unless ``first`` is None), ``charge_ms(second, second_ms)``,
        then :meth:`end`, in one call: a dispatcher's closing charges (the command's accumulated
        hashing, then ``ohor``), the same additions in the same order as the separate calls."""
        stack = self._stack
        record = stack[-1]
        name, breakdown = record.name, record.breakdown
        by_component, by_pair = self.by_component, self.by_command_component
        now, ms = self.now_ms, record.ms  # (_book's additions written out, as in begin_charged)
        if first is not None:
            now += first_ms
            by_component[first] += first_ms
            by_pair[name, first] += first_ms
            ms += first_ms
            breakdown[first] = breakdown.get(first, 0.0) + first_ms
        self.now_ms = now + second_ms
        by_component[second] += second_ms
        by_pair[name, second] += second_ms
        record.ms = ms + second_ms
        breakdown[second] = breakdown.get(second, 0.0) + second_ms
        if len(stack) > 1 or self.realtime:  # nested (rolled up) or held: the general close
            return self.end()
        # end() of an outermost virtual-time command, written out
        stack.pop()
        started = self._started.pop()
        self.by_command[name] += record.ms
        self.command_counts[name] += 1
        record.wall_ms = (self._wallclock() - started) * 1000.0
        self.last = record
        return record

    def end(self) -> CommandRecord:
        """Close the innermost open command (rolled up into its parent; realtime: sleep until due)."""
        record = self._stack.pop()
        started = self._started.pop()
        if self._stack:  # a nested command's cost is also its parent's
            parent = self._stack[-1]
            parent.ms += record.ms
            for comp, ms in record.breakdown.items():
                parent.breakdown[comp] = parent.breakdown.get(comp, 0.0) + ms
        self.by_command[record.name] += record.ms
        self.command_counts[record.name] += 1
        record.wall_ms = (self._wallclock() - started) * 1000.0
        if self.realtime and not self._stack:
            record.slept_ms = self.hold(record.ms, started)
        self.last = record
        return record

    def hold(self, modelled_ms: float, started: float) -> float:
        """Sleep until ``modelled_ms`` after ``started`` (a wallclock reading)."""
        remaining = modelled_ms / 1000.0 - (self._wallclock() - started)
        if remaining > 0:
            self._sleep(remaining)
            return remaining * 1000.0
        return 0.0

    # ---- reading the ledger ----------------------------------------------

    def breakdown(self, command: str | None = None) -> dict[str, float]:
        """ms per component, for one command name or for everything."""
        if command is None:
            return dict(self.by_component)
        return {comp: ms for (cmd, comp), ms in self.by_command_component.items() if cmd == command}

    def reset(self) -> None:
        """Forget the ledger and return to time zero (the RNG keeps its state)."""
        if self._stack:
            raise RuntimeError("cannot reset a clock while a command is running")
        self.now_ms = 0.0
        self.by_component.clear()
        self.by_command.clear()
        self.command_counts.clear()
        self.by_command_component.clear()
        self.last = None
