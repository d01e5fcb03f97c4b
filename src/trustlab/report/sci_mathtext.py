"""Log-axis tick labels (``$\\mathdefault{10^{3}}$``, ``$\\mathdefault{2\\times10^{-1}}$``) laid out without pyparsing.

matplotlib's log formatter writes every labelled tick of a log axis as math text, and
its math-text parser runs a pyparsing grammar of all of TeX math over each string:
about 3 ms a label, a tenth of drawing the report's figures, most of them log-log. For
the two shapes that formatter writes, the layout is built here by calling the parser's
own actions (``symbol``, ``start_group``, ``end_group``, ``group``, ``subsuper``,
``math``, ``non_math``, ``main``) with the tokens, in the order the grammar calls them,
so the boxes, glyphs and kerning are matplotlib's. Any other string is parsed as usual.
``tests/lab/test_report_mathtext.py`` compares the two layouts glyph by glyph for every
exponent and mantissa the formatter writes.

Those actions, ``ParserState`` and the parser's ``_state_stack`` / ``_em_width_cache`` are
matplotlib's private internals (written against matplotlib 3.11, pinned). So that another
matplotlib draws the report as stock matplotlib would rather than breaking it, nothing here is
trusted unchecked: without ``matplotlib._mathtext.Parser`` the parser is matplotlib's own; the
first label of each shape (a decade, a mantissa) in a process is laid out both ways and the
grammar's layout used, the shortcut kept for that shape only if the two ship the same glyphs
and rules; and a shortcut that raises gives the grammar's layout, the shortcut then left off.

Imported with matplotlib, on the first figure (see ``plots.preload``).
"""

from __future__ import annotations

import re
from typing import Any

from matplotlib.mathtext import MathTextParser

_mathtext: Any
_Parser: Any
try:
    from matplotlib import _mathtext as _matplotlib_mathtext

    _mathtext, _Parser = _matplotlib_mathtext, _matplotlib_mathtext.Parser
except (ImportError, AttributeError):  # another matplotlib: its own parser, unchanged
    _mathtext, _Parser = None, None

# LogFormatterSciNotation: r'$\mathdefault{%s%s^{%d}}$' (a decade), r'$\mathdefault{%s%g\times%s^{%d}}$'
# (else); here without a sign, base 10 and %g as a plain decimal
SCIENTIFIC = re.compile(r"\$\\mathdefault\{(?:([0-9]+(?:\.[0-9]+)?)\\times)?10\^\{(-?[0-9]+)\}\}\$")
TIMES = r"\times"


class _Tokens(list):
    """The tokens of a parse action that reads them with ``as_list()`` (as pyparsing's results)."""

    def as_list(self) -> list:
        return list(self)


class SciParser(_Parser or object):  # type: ignore[misc]  # (never built without matplotlib's Parser)
    """matplotlib's math-text parser, but for log tick labels, laid out by its actions without the grammar."""

    # per label shape (False: a decade, True: with a mantissa): None until checked against the
    # grammar in this process, then whether the shortcut gave its layout
    shortcut: dict[bool, bool | None] = {False: None, True: None}

    def parse(self, s: str, fonts_object: Any, fontsize: float, dpi: float) -> Any:
        match = SCIENTIFIC.fullmatch(s)
        shape = match is not None and match.group(1) is not None
        if match is None or self.shortcut[shape] is False:
            return super().parse(s, fonts_object, fontsize, dpi)
        try:
            fast = self._laid_out(s, match, fonts_object, fontsize, dpi)
        except Exception:  # another matplotlib's actions or state: the grammar from now on
            SciParser.shortcut[shape] = False
            return super().parse(s, fonts_object, fontsize, dpi)
        if self.shortcut[shape]:
            return fast
        grammar = super().parse(s, fonts_object, fontsize, dpi)
        SciParser.shortcut[shape] = _same_layout(fast, grammar)
        return grammar

    def _laid_out(self, s: str, match: re.Match, fonts_object: Any, fontsize: float, dpi: float) -> Any:
        # Parser.parse's set-up and tear-down, around what its grammar does with s
        self._state_stack = [_mathtext.ParserState(fonts_object, "default", "rm", fontsize, dpi)]
        self._em_width_cache: dict = {}
        try:
            return self._scientific(s[1:-1], match.group(1), match.group(2))
        finally:
            self._state_stack = []
            self._needs_space_after_subsuper = False
            self._em_width_cache = {}

    def _scientific(self, inner: str, mantissa: str | None, exponent: str) -> Any:
        """main = non_math + math_string + non_math; the math (``inner``) is one group,
        ``\\mathdefault{[mantissa \\times] 1 0^{exponent}}``, its tokens' ``loc`` their index in ``inner``."""
        before, = self.non_math([""])  # what precedes the $: nothing, and the math font set
        self.start_group({"font": "default"})  # \mathdefault{
        at = len(r"\mathdefault{")
        tokens: list = []
        for c in mantissa or "":
            tokens += self.symbol(inner, at, {"sym": c})
            at += 1
        if mantissa:
            tokens += self.symbol(inner, at, {"sym": TIMES})
            at += len(TIMES)
        tokens += self.symbol(inner, at, {"sym": "1"})  # a token of a nucleus alone is that nucleus
        nucleus_at = at + 1
        nucleus, = self.symbol(inner, nucleus_at, {"sym": "0"})
        at = nucleus_at + len("0^{")
        self.start_group({})
        raised: list = []
        for c in exponent:
            raised += self.symbol(inner, at, {"sym": c})
            at += 1
        self.end_group()
        superscript, = self.group({"group": raised})
        tokens += self.subsuper(inner, nucleus_at, {"nucleus": nucleus, "subsuper": ["^", superscript]})
        self.end_group()
        group, = self.group({"group": tokens})
        math, = self.math(_Tokens([group]))
        after, = self.non_math([""])
        return self.main(_Tokens([before, math, after]))[0]


def _same_layout(fast: Any, grammar: Any) -> bool:
    """Whether two parses ship the same box: size, glyphs (font, size, glyph, place) and rules."""
    try:
        return _mathtext.ship(fast).to_vector() == _mathtext.ship(grammar).to_vector()
    except Exception:  # no ship or no vector output to compare: not trusted
        return False


class ReportMathText(MathTextParser):
    """``MathTextParser`` whose parser is :class:`SciParser` (built once, when first needed, like matplotlib's).

    matplotlib's ``_parse_cached`` builds its parser into the class's ``_parser`` when that is
    None; set here first. A matplotlib without ``_mathtext.Parser``, or whose Parser cannot be
    built so, or that keeps its parser elsewhere, parses with its own.
    """

    _parser = None
    _no_shortcut = _Parser is None

    def parse(self, s: str, dpi: float = 72, prop: Any = None, *, antialiased: Any = None) -> Any:
        if ReportMathText._parser is None and not ReportMathText._no_shortcut:
            try:
                ReportMathText._parser = SciParser()
            except Exception:
                ReportMathText._no_shortcut = True  # matplotlib's _parse_cached builds its own
        return super().parse(s, dpi, prop, antialiased=antialiased)
