"""The findings table (:mod:`core.analyses.findings`) as cells, Markdown and one HTML page.

One function turns a row into its display cells (:func:`row_cells`); the Findings page, ``python -m core
findings --markdown`` and the HTML report all print those cells, so they cannot disagree."""
from __future__ import annotations

import datetime as _dt
import html
from typing import Any

import pandas as pd

from core.views.report import _CSS, _ci, _table

#: the table's columns, in order
COLUMNS = ("finding", "task", "claim", "paper", "measured here (95 % CI, N)", "verdict", "preset · resolution",
           "utility gap", "command / runs needed")


def _interval(e: dict[str, Any] | None, digits: int = 3) -> str:
    if not e:
        return "—"
    return f"{_ci(e.get('mean'), e.get('ci_low'), e.get('ci_high'), digits)}"


def _signed(e: dict[str, Any]) -> str:
    if e.get("ci_low") is None:
        return f"{e['mean']:+.3f} (no interval)"
    return f"{e['mean']:+.3f} [{e['ci_low']:+.3f}, {e['ci_high']:+.3f}]"


def _comparison_text(m: dict[str, Any]) -> str:
    return (f"FFNN {_interval(m['ffnn'])}, RNN {_interval(m['rnn'])}; FFNN − RNN {_signed(m['difference'])}, "
            f"N = {m['difference']['n']}")


def measured_text(row: dict[str, Any]) -> str:
    """What this machine measured for ``row`` (or "not run …")."""
    if row["status"] != "measured":
        return f"not run ({row.get('note') or 'nothing cached'})" if row["status"] == "not run" else row["status"]
    m = row["measured"]
    if row["finding"] == "F1a":
        return "; ".join(f"{name}: {_comparison_text(c)}" for name, c in m.items())
    if row["finding"] == "F3":
        return (f"RNN attack accuracy {_interval(m['attack_accuracy'])}, utility loss {_interval(m['utility_loss'])}, "
                f"N = {m['attack_accuracy']['n']}")
    return _comparison_text(m)


def verdict_text(row: dict[str, Any]) -> str:
    """The verdict word(s) with the reason, or "not run"."""
    if row["status"] != "measured":
        return "not run"
    m = row["measured"]
    if row["finding"] == "F1a":
        return "; ".join(f"{name}: {(c['verdict'] or {}).get('value', '—')}" for name, c in m.items())
    v = m.get("verdict") or {}
    return f"{v.get('value', '—')} — {v.get('reason', '')}"


def _resolution_text(row: dict[str, Any]) -> str:
    res = row.get("resolution")
    if not res:
        return row["preset"]
    return (f"{row['preset']} · {res['n_members']} + {res['n_nonmembers']} eval records "
            f"(one record = {res['tpr_step']:.3g} TPR)")


def _gap_text(row: dict[str, Any]) -> str:
    gap = row.get("utility_gap")
    if not gap:
        return "—"
    g = gap["gap"]
    metric = row.get("utility_metric") or "utility"
    return (f"{metric} FFNN {gap['ffnn']:.3f} vs RNN {gap['rnn']:.3f}, gap {_signed(g)}: "
            f"{'matched' if gap['matched'] else 'NOT matched'} (±5 %)")


def needs_text(row: dict[str, Any]) -> str:
    """The runs a row still needs for N = its target (count by kind and the expected time), or ""."""
    missing = row.get("missing") or []
    if not missing:
        return ""
    kinds: dict[str, int] = {}
    for m in missing:
        kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
    what = ", ".join(f"{n} {'run' if k == 'experiment' else k + ' job'}{'s' if n != 1 else ''}" for k, n in kinds.items())
    return f"for N = {row['target_repeats']}: {what}; {row['missing_time']}"


def row_cells(row: dict[str, Any]) -> dict[str, str]:
    """The display cells of one row (:data:`COLUMNS`)."""
    paper = row.get("paper") or {}
    cmd = row.get("command", "")
    needs = needs_text(row)
    return {"finding": row["finding"], "task": row["task"], "claim": row["claim"],
            "paper": (f"{paper.get('text', '')} ({paper.get('cite') or row['source']['cite']})").strip(),
            "measured here (95 % CI, N)": measured_text(row), "verdict": verdict_text(row),
            "preset · resolution": _resolution_text(row), "utility gap": _gap_text(row),
            "command / runs needed": cmd + (f" — needs {needs}" if needs else "")}


def findings_frame(table: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([row_cells(r) for r in table["rows"]], columns=list(COLUMNS))


def _header(table: dict[str, Any]) -> str:
    return (f"Preset {table['preset']}; tasks {', '.join(table['tasks'])}; commit {table['commit']}; target "
            f"N = {table['target_repeats']} repeats (the fewest with which the exact sign-flip test can reach 95 %). "
            f"Read from the cache by `python -m core findings --preset {table['preset']}`; nothing was trained to "
            f"make this table.")


def findings_markdown(table: dict[str, Any]) -> str:
    """The table as Markdown (one line per row; ``|`` in cells escaped)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["# The studies' findings on this machine", "", _header(table), "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in table["rows"]:
        cells = row_cells(r)
        lines.append("| " + " | ".join(cell(cells[c]) for c in COLUMNS) + " |")
    lines += ["", "Verdicts: holds / reversed / inconclusive, from the paired FFNN − RNN difference's 95 % t interval "
                  "and the exact sign-flip test (N ≥ 6); one repeat is inconclusive. Rows marked NOT matched compare "
                  "models of different utility: read them with that gap."]
    return "\n".join(lines) + "\n"


def findings_html(table: dict[str, Any]) -> str:
    """The table as one self-contained HTML page (the report's style)."""
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'><title>MIA Explorer — findings</title>",
        f"<style>{_CSS} table.df td {{ text-align: left; vertical-align: top; }}</style></head><body>",
        "<h1>The studies' findings on this machine</h1>",
        f"<p class='muted'>{html.escape(_header(table))} Written {stamp}.</p>",
        _table(findings_frame(table)),
        "<p class='muted'>Verdicts: holds / reversed / inconclusive, from the paired FFNN − RNN difference's 95 % t "
        "interval and the exact sign-flip test (N ≥ 6); one repeat is inconclusive.</p>",
        "</body></html>"])
