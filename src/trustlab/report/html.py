"""The HTML page: one file, readable from disk without a server.

Everything is escaped; no scripts, no external styles or fonts. Images are
embedded as data URIs (so the page alone is the whole report) unless the
caller asks for links to the PNG files written beside it.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any, Sequence

from trustlab.textable import format_cell

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.5em 0;font-size:12.5px}
th,td{border:1px solid #ccd;padding:2px 6px;vertical-align:top}
th{background:#eef}td.num{text-align:right;font-variant-numeric:tabular-nums}
.fail{background:#fee;border:1px solid #c66;padding:.5em 1em}
.ok{color:#285}.bad{color:#b22}.small{font-size:12px;color:#555}
figure{margin:1em 0}figcaption{font-size:12px;color:#555}
img{max-width:100%;border:1px solid #ddd}
pre{background:#f7f7f9;padding:.6em;overflow-x:auto;font-size:12px}
"""


def esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


def cell(v: Any) -> str:
    """A table cell; a number right-aligned.

    Only an exact ``int`` or ``float`` is written unescaped (its digits, sign, point, e, inf,
    nan: nothing to escape). A subclass (a numpy float, or anything with its own ``__str__`` or
    ``__format__``) is still a number but escaped; a ``bool`` is text ("True").
    """
    if type(v) in (int, float):
        return f'<td class="num">{format_cell(v)}</td>'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f'<td class="num">{esc(format_cell(v))}</td>'
    return f"<td>{esc(format_cell(v))}</td>"


def table(rows: Sequence[dict[str, Any]], cols: Sequence[str], limit: int | None = None,
          anchor: str | None = None) -> str:
    """An HTML table; with ``anchor``, that column's cells link to the section of the same id."""
    shown = rows if limit is None else rows[:limit]
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)

    def td(r: dict[str, Any], c: str) -> str:
        if c == anchor and r.get(c):
            return f'<td><a href="#{esc(r[c])}">{esc(r[c])}</a></td>'
        return cell(r.get(c))

    body = "".join("<tr>" + "".join(td(r, c) for c in cols) + "</tr>" for r in shown)
    more = (f'<p class="small">{len(rows) - len(shown)} more rows in the CSV file.</p>'
            if len(shown) < len(rows) else "")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def image(png: Path, out_dir: Path, alt: str, inline: bool) -> str:
    if inline:  # base64's letters, digits, + / = need no escaping (a figure is ~40 kB of them)
        return (f'<img src="data:image/png;base64,{base64.b64encode(png.read_bytes()).decode("ascii")}" '
                f'alt="{esc(alt)}">')
    return f'<img src="{esc(png.relative_to(out_dir).as_posix())}" alt="{esc(alt)}">'


def figure(png: Path, out_dir: Path, alt: str, caption_html: str, inline: bool) -> str:
    """A drawn figure with its caption and a link to the PNG beside the page."""
    return (f'<figure>{image(png, out_dir, alt, inline)}<figcaption>{caption_html} · '
            f'<a href="plots/{png.name}">PNG</a></figcaption></figure>')


def details(summary: str, body: str) -> str:
    return f"<details><summary>{esc(summary)}</summary>{body}</details>"


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def json_pre(doc: Any) -> str:
    return pre(json.dumps(doc, indent=2, default=str))


def page(title: str, intro: str, sections: Sequence[str]) -> list[str]:
    """The page in pieces, in order, to be written one after the other (``writelines``): joined, a
    report's page (megabytes of embedded figures) was copied whole once more, and encoded whole."""
    return ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{esc(title)}</h1>", intro, *sections, "</body></html>\n"]
