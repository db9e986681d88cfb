"""The one escaping of a user's strings (class names, CSV column names and cells, text lines, file and folder
names, member ids) for every place they are shown.

The pages draw text as Streamlit Markdown and the HTML report turns the same text into HTML
(:func:`core.views.report.markdown_html`). A user's string goes into either only through :func:`plain_markdown`:
every character Markdown (or Streamlit's extensions: ``$`` LaTeX, ``:`` shortcodes, raw HTML) gives a meaning is
backslash-escaped, so a cell holding ``![x](http://host/a.png)`` shows those characters and fetches nothing. The
report reads the escapes back as the literal characters and HTML-escapes them (:func:`unescape_to_html`).
A user's string in a Plotly figure goes through :func:`plain_plotly`.
"""
from __future__ import annotations

import html
import re

#: characters Streamlit's Markdown gives a meaning (CommonMark's punctuation, ``$`` for LaTeX, ``:`` for
#: emoji and coloured text shortcodes, ``@`` and ``.`` for GitHub's bare e-mail and www links)
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:=\"'&@")
#: where :func:`protect_escapes` parks an escaped character while the report's Markdown rules run (a private-use
#: block: no user text reaches it unescaped, :func:`plain_markdown` maps it away)
_PARK = 0xE000


def plain_markdown(text: object) -> str:
    """``text`` to show as it is inside Streamlit Markdown: every Markdown character backslash-escaped
    and line breaks as spaces, so a user's data cannot become an image fetched from elsewhere, a link,
    a heading, HTML or LaTeX on the page."""
    flat = " ".join(str(text).split())
    flat = "".join("\ufffd" if _PARK <= ord(c) < _PARK + 128 else c for c in flat)
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in flat)


def protect_escapes(markdown: str) -> str:
    """``markdown`` with each backslash-escaped special character parked out of the way of Markdown rules."""
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~$:=\"'&@])", lambda m: chr(_PARK + ord(m.group(1))), markdown)


def unescape_to_html(text: str) -> str:
    """The parked characters of :func:`protect_escapes` back, each HTML-escaped (run after the Markdown rules)."""
    return re.sub(r"[\ue000-\ue07f]", lambda m: html.escape(chr(ord(m.group(0)) - _PARK), quote=True), text)


def shown_text(markdown: str) -> str:
    """What a reader sees of Markdown made with :func:`plain_markdown` (its escapes removed): for messages compared
    as text, e.g. by tests."""
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~$:=\"'&@])", r"\1", markdown)


def plain_plotly(text: object) -> str:
    """A user's string inside a Plotly figure's text: ``&``, ``<`` and ``>`` as HTML entities. Plotly.js draws a subset
    of HTML there and reads the entities between tags back as characters, so an escaped string opens no tag and
    shows as typed."""
    return html.escape(str(text), quote=False)


#: a spreadsheet reads a cell that starts with one of these as a formula (``=HYPERLINK(...)``, ``@SUM``, ``+cmd|``)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A cell of a CSV the explorer writes: a text that a spreadsheet would run as a formula gets a leading ``'``
    (shown as text there); numbers, and texts that read as numbers (``-0.5``), are left as they are."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def csv_text(frame) -> str:
    """``frame`` (a pandas DataFrame) as CSV text with every cell and column name through :func:`csv_cell`."""
    safe = frame.map(csv_cell) if hasattr(frame, "map") else frame.applymap(csv_cell)
    safe.columns = [csv_cell(c) for c in safe.columns]
    return safe.to_csv(index=False)
