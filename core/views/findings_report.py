"""The findings table (:mod:`core.analyses.findings`) as cells, Markdown and one HTML page.

One function turns a row into its display cells (:func:`row_cells`); the Findings page, ``python -m core
findings --markdown`` and the HTML report all print those cells, so they cannot disagree."""
from __future__ import annotations

import datetime as _dt
import html

import pandas as pd

from core.analyses.findings_base import DecideBlock, FindingRow, FindingsTable, MeasuredCell, RuleCell, duration_text
from core.measurement.stats import NOT_COMPARABLE, UNINFORMATIVE, Estimate
from core.views.report import _CSS, _table
from core.views.style import estimate_text, finite

#: the table's columns, in order
COLUMNS = ("finding", "task", "claim", "paper", "measured here (95 % CI, N)", "verdict", "decidable at · target N",
           "preset · resolution", "utility gap (train and validation)", "declared: metric · family · test · deviations",
           "made on", "repeats to decide (80 % power)", "command / runs needed")
#: the column of :func:`decide_text`
DECIDE = COLUMNS[-2]
#: how F1 / F1a are judged: as ``python -m core compare`` judges the same repeats (core.analyses.repeats.judged_pairs)
HOLM_NOTE = ("F1 is the one answer every page gives (core.analyses.arch_answer): the studies' attack accuracy "
             "Holm-adjusted over compare's secondary metrics; F1a the declared primary metric (LiRA AUC, else RMIA).")
#: the verdict words, as every findings output explains them
VERDICT_WORDS = ("Verdicts: holds / reversed / inconclusive from the row's declared test (paired rows: the FFNN − RNN "
                 "difference's 95 % t interval and the exact sign-flip test, Holm-adjusted over the row's family; F3: "
                 "TOST); not comparable where utility is not matched on train and validation, or not yet shown to be (the "
                 "gaps shown, no holds / reversed); uninformative where both arms sit at a ceiling or a floor.")
#: the marker comments around the generated block in a Markdown file (docs/results.md)
BEGIN, END = "<!-- findings:begin -->", "<!-- findings:end -->"


def _signed(e: Estimate) -> str:
    if finite(e.ci_low) is None:
        return f"{e.mean:+.3f} (no interval)"
    return f"{e.mean:+.3f} [{e.ci_low:+.3f}, {e.ci_high:+.3f}]"


def _comparison_text(m: MeasuredCell) -> str:
    return (f"FFNN {estimate_text(m.ffnn)}, RNN {estimate_text(m.rnn)}; FFNN − RNN {_signed(m.difference)}, "
            f"N = {m.difference.n}")


def measured_text(row: FindingRow) -> str:
    """What this machine measured for ``row`` (or "not run …")."""
    m = row.measured
    if row.status != "measured" or m is None:
        return f"not run ({row.note or 'nothing cached'})" if row.status == "not run" else row.status
    if isinstance(m, RuleCell):
        return (f"RNN attack accuracy {estimate_text(m.attack_accuracy)}, utility loss {estimate_text(m.utility_loss)}, "
                f"N = {m.attack_accuracy.n}")
    if isinstance(m, MeasuredCell):
        return _comparison_text(m)
    return "; ".join(f"{name}: {_comparison_text(c)}" for name, c in m.items())


def verdict_text(row: FindingRow) -> str:
    """The verdict word first (holds / reversed / inconclusive), its reason in parentheses; "— (not run)" when nothing
    is measured. Every verdict is the one ``python -m core compare`` gives the same metric on the same cached
    repeats; F1a's is the comparison's declared primary metric's, the other attack's beside it (Holm-adjusted)."""
    m = row.measured
    if row.status != "measured" or m is None:
        return "— (not run)"
    if isinstance(m, (MeasuredCell, RuleCell)) and row.verdict is not None and row.verdict_reason is not None:
        return f"{row.verdict} ({row.verdict_reason})"  # the row's own word (its declared rules)
    if isinstance(m, (MeasuredCell, RuleCell)):
        v = m.verdict
        return "— ()" if v is None else f"{v.value} ({v.reason})"
    words = {name: c.verdict.value if c.verdict else "—" for name, c in m.items()}
    primary = row.primary if row.primary in words else None
    if primary is None:
        primary = next((n for n in ("lira_auc", "rmia_auc") if n in words), next(iter(words), None))
    if primary is None:
        return "— (not run)"
    others = "; ".join(f"{n}: {w}" + (" after Holm" if m[n].p_holm else "")
                       for n, w in words.items() if n != primary)
    word = row.verdict if row.verdict in (NOT_COMPARABLE, UNINFORMATIVE) else words[primary]
    gate = f"; {row.verdict_reason}" if word != words[primary] and row.verdict_reason else ""
    return f"{word} (primary: {primary}" + (f"; {others}" if others else "") + f"{gate})"


def _resolution_text(row: FindingRow) -> str:
    r = row.resolution
    if r is None:
        return row.preset
    return f"{row.preset} · {r.n_members} + {r.n_nonmembers} eval records (one record = {r.tpr_step:.3g} TPR)"


def _gap_text(row: FindingRow) -> str:
    if row.matched and row.matched.get("gaps"):
        return "; ".join(row.matched["gaps"].values())
    gap = row.utility_gap
    if not gap:
        return "—"
    metric = row.utility_metric or "utility"
    return (f"{metric} FFNN {gap.ffnn:.3f} vs RNN {gap.rnn:.3f}, gap {_signed(gap.gap)}: "
            f"{'matched' if gap.matched else 'NOT matched'} (±5 %)")


def needs_text(row: FindingRow) -> str:
    """The runs a row still needs for N = its target (count by kind and the expected time), or ""."""
    if not row.missing:
        return ""
    kinds: dict[str, int] = {}
    for m in row.missing:
        kinds[m.kind] = kinds.get(m.kind, 0) + 1
    what = ", ".join(f"{n} {'run' if k == 'experiment' else k + ' job'}{'s' if n != 1 else ''}" for k, n in kinds.items())
    return f"for N = {row.target_repeats}: {what}; {row.missing_time}"


def _need_text(b: DecideBlock, n: int) -> str:
    if b.repeats is None:
        return f"|Δ| = {abs(b.difference):.3g}: more than 100,000 repeats (or no difference)"
    time = ("" if not b.more else
            f", {b.more} more ≈ {duration_text(b.expected_s)} here" if b.expected_s is not None
            else f", {b.more} more (time unknown: nothing of this kind timed here)")
    return f"|Δ| = {abs(b.difference):.3g}: N = {b.repeats}{time}"


def decide_text(row: FindingRow) -> str:
    """How many repeats make the row's 95 % interval narrower than the study's difference (where it gives one)
    and than the difference measured here, with the expected time; and what else deciding needs."""
    parts = []
    for e in row.decide or ():
        name = f"{e.metric}: " if row.finding in ("F1a", "F3") else ""
        study = f"study {_need_text(e.study, e.n)} ({e.study.source})" if e.study else e.study_note
        parts.append(f"{name}{study}; at the measured difference {_need_text(e.at_measured, e.n)} "
                     f"(sd {e.sd:.3g} over N = {e.n})" if e.sd is not None else f"{name}{study}")
    if not parts and row.status == "measured":
        parts.append("N = 1: no spread measured yet (run ≥ 2 repeats)")
    if row.to_decide_note:
        parts.append(row.to_decide_note)
    return "; ".join(parts) or "—"


def _decidable_text(row: FindingRow) -> str:
    if row.decidable_at is None:
        return "—"
    text = f"decidable from N = {row.decidable_at}; target N = {row.target_repeats}"
    if row.target_sized_by:
        text += f" ({row.target_sized_by})"
    return text + (f". {row.design_note}" if row.design_note else "")


def _declared_text(row: FindingRow) -> str:
    d = row.spec or {}
    if not d:
        return "—"
    fam = ", ".join(row.family or ())
    parts = [f"“{d['quote']}” ({d['cite']})", f"metric: {d['metric']}; Holm family ({len(row.family or ())}): {fam}",
             f"expected FFNN − RNN sign: {d['expected_sign']:+d}" if d["expected_sign"] else "expected: equivalence",
             f"test: {d['test']}", f"matching: {d['matching']}", f"epochs: {d['epochs']}", f"sizes: {d['sizes']}"]
    parts += [f"deviation: {x}" for x in d["deviations"]] + [f"NOT BUILT: {x}" for x in d["not_built"]]
    return " · ".join(parts)


def row_cells(row: FindingRow) -> dict[str, str]:
    """The display cells of one row (:data:`COLUMNS`)."""
    paper = row.paper
    needs = needs_text(row)
    text = (paper.text if paper else None) or ""
    cite = (paper.cite if paper else None) or row.source.cite()
    return {"finding": row.finding, "task": row.task, "claim": row.claim,
            "paper": f"{text} ({cite})".strip(),
            "measured here (95 % CI, N)": measured_text(row), "verdict": verdict_text(row),
            "decidable at · target N": _decidable_text(row),
            "preset · resolution": _resolution_text(row), "utility gap (train and validation)": _gap_text(row),
            "declared: metric · family · test · deviations": _declared_text(row),
            "made on": "; ".join(row.machine or ()) or "—", DECIDE: decide_text(row),
            "command / runs needed": row.command + (f" — needs {needs}" if needs else "")}


def findings_frame(table: FindingsTable) -> pd.DataFrame:
    return pd.DataFrame([row_cells(r) for r in table.rows], columns=list(COLUMNS))


#: the Findings page's first table, verdict first: the verdict's word and the value measured here, narrow enough to
#: read at 1280 px beside the sidebar (the whole row, reasons and all, is :func:`row_cells`, shown under it)
SHORT_COLUMNS = ("verdict", "finding", "task", "preset", "measured here (95 % CI, N)")


def verdict_word(row: FindingRow) -> str:
    """The verdict's word alone (holds / reversed / inconclusive / not comparable / uninformative); "— (not run)"
    where nothing is measured (or what the row is instead: "— (no preset)"), as every verdict column opens a cell
    that carries no verdict; "—" where a measured row has no verdict."""
    if row.status != "measured" or row.measured is None:
        return f"— ({row.status})"
    return verdict_text(row).split(" (", 1)[0] or "—"


def _difference_text(m: MeasuredCell) -> str:
    return f"FFNN − RNN {_signed(m.difference)}, N = {m.difference.n}"


def measured_short(row: FindingRow) -> str:
    """The value the verdict reads, in one short cell: the paired difference FFNN − RNN with its 95 % interval and
    N (F1a: the primary metric's, named), F3: the RNN's attack accuracy and utility loss; "—" where nothing is
    measured (the verdict column says why)."""
    m = row.measured
    if row.status != "measured" or m is None:
        return "—"
    if isinstance(m, RuleCell):
        return (f"RNN attack acc. {estimate_text(m.attack_accuracy)}, utility loss {estimate_text(m.utility_loss)}, "
                f"N = {m.attack_accuracy.n}")
    if isinstance(m, MeasuredCell):
        return _difference_text(m)
    primary = row.primary if row.primary in m else next((n for n in ("lira_auc", "rmia_auc") if n in m), None)
    primary = primary or next(iter(m), None)
    return "—" if primary is None else f"{primary}: {_difference_text(m[primary])}"


def findings_short_frame(table: FindingsTable) -> pd.DataFrame:
    """:data:`SHORT_COLUMNS` of every row, in the table's order."""
    return pd.DataFrame([{"verdict": verdict_word(r), "finding": r.finding, "task": r.task, "preset": r.preset,
                          "measured here (95 % CI, N)": measured_short(r)} for r in table.rows],
                        columns=list(SHORT_COLUMNS))


def findings_command(table: FindingsTable) -> str:
    """The command that writes ``table`` (its tasks, presets and sets)."""
    tasks = "" if sorted(table.tasks) == sorted(("image", "translation", "navigation")) and len(table.tasks) == 3 \
        else "".join(f" --task {t}" for t in table.tasks)
    sets = "".join(f" --set {k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                   for k, v in (table.sets or {}).items())
    imports = f" --imports {table.sources['folder']}" if table.sources and table.sources.get("folder") else ""
    return f"python -m core findings{tasks} --preset {table.preset}{sets}{imports}"


def _method(table: FindingsTable) -> str:
    return ("Each row declares its metric, Holm family and test before any data (finding_specs). Decidable at: the "
            "fewest N at which that test can decide at all (exact sign-flip floor 2/2^N × the Holm family's size); "
            "target N: ≥ 80 % power at the paper's effect where it gives one, else at the effect measured here, "
            "never below it. A row that has read its data at a decidable N queues nothing more (a larger N is a "
            "new design); a row that cannot decide even when run (not comparable, uninformative) queues nothing, unless it is "
            "not comparable only because its utility gaps' intervals are too wide to settle the matching (more "
            "repeats can narrow them): it queues the runs up to its target. "
            "Read from the cache only; nothing was trained to make this table; times from the runs measured here.")


def _header(table: FindingsTable) -> str:
    return (f"Presets {table.preset}; tasks {', '.join(table.tasks)}; commit {table.commit}; "
            f"`{findings_command(table)}`. {_method(table)}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_rows(table: FindingsTable) -> list[str]:
    """The table's header, rule and one line per row (``|`` in cells escaped)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in table.rows:
        cells = row_cells(r)
        lines.append("| " + " | ".join(_cell(cells[c]) for c in COLUMNS) + " |")
    return lines


def sources_lines(table: FindingsTable) -> list[str]:
    """Where the F1 / F1a rows' runs come from, when summaries were imported: each batch (machine, torch version,
    commit) and each row whose runs mix origins; [] when nothing was imported."""
    src = table.sources
    if not src:
        return []
    lines = [f"Run summaries imported from `{src.get('folder', '')}` (read where this machine's cache lacks a run, "
             f"under the same config hash; F1 / F1a rows only):"]
    for b in src.get("batches", []):
        lines.append(f"- {b['batch']}: {b['machine']}, torch {b['torch']}, commit {b['commit']} "
                     f"({b['summaries']} summaries)")
    mixed = [r for r in src.get("rows", []) if r.get("mixed")]
    if mixed:
        lines.append("")
        lines.append("Rows whose runs mix machines, torch versions or commits (same config hashes):")
        lines += [f"- {r['finding']} {r['task']} {r['preset']}: " + "; ".join(r["origins"]) for r in mixed]
    one = [r for r in src.get("rows", []) if r.get("origins") and not r.get("mixed")]
    if one:
        lines.append("")
        lines.append("Rows read from one origin: " + "; ".join(
            f"{r['finding']} {r['task']} {r['preset']} ({r['origins'][0]})" for r in one))
    return [_cell(line) if not line.startswith("- ") else "- " + _cell(line[2:]) for line in lines]


def findings_markdown(table: FindingsTable) -> str:
    """The table as Markdown (one line per row; ``|`` in cells escaped)."""
    lines = ["# The studies' findings on this machine", "", _header(table), "", *markdown_rows(table)]
    lines += ["", f"{VERDICT_WORDS} {HOLM_NOTE}"]
    if table.sources:
        lines += ["", *sources_lines(table)]
    return "\n".join(lines) + "\n"


def findings_html(table: FindingsTable) -> str:
    """The table as one self-contained HTML page (the report's style)."""
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'><title>MIA Explorer — findings</title>",
        f"<style>{_CSS} table.df td {{ text-align: left; vertical-align: top; }}</style></head><body>",
        "<h1>The studies' findings on this machine</h1>",
        f"<p class='muted'>{html.escape(_header(table))} Written {stamp}.</p>",
        _table(findings_frame(table)),
        f"<p class='muted'>{html.escape(VERDICT_WORDS)} {html.escape(HOLM_NOTE)}</p>",
        *(f"<p class='muted'>{html.escape(line)}</p>" for line in sources_lines(table) if line),
        "</body></html>"])


def findings_block(table: FindingsTable, out_name: str = "docs/results.md") -> str:
    """The generated summary between :data:`BEGIN` and :data:`END`: the command that wrote it (``--markdown
    out_name``), the commit, the table."""
    return "\n".join([
        BEGIN,
        "## Summary: the studies' findings (generated — do not edit by hand)",
        "",
        f"Written by `{findings_command(table)} --markdown {out_name}` at commit {table.commit} (presets "
        f"{table.preset}; tasks {', '.join(table.tasks)}). {_method(table)}",
        "",
        *markdown_rows(table),
        "",
        f"{VERDICT_WORDS} {HOLM_NOTE} \"not run\": nothing of that row is in the cache the command "
        "read; the sections below give the measurements made with the bench scripts (their own commands and commits).",
        *(["", *sources_lines(table)] if table.sources else []),
        END])


def markdown_into(existing: str | None, table: FindingsTable, out_name: str) -> str:
    """What ``--markdown FILE`` writes: FILE with its block between :data:`BEGIN` and :data:`END` replaced by
    :func:`findings_block` when FILE has both markers, else the whole table (:func:`findings_markdown`)."""
    if existing is not None and BEGIN in existing and END in existing:
        head, rest = existing.split(BEGIN, 1)
        if END in rest:
            return head + findings_block(table, out_name) + rest.split(END, 1)[1]
    return findings_markdown(table)
