"""Files of the analyses: one CSV (the data) and one self-contained HTML (the figure, plotly
inlined so it opens offline) per analysis, plus ``analyses.json`` with everything and the
verdicts. Used by ``python -m core analyze`` and the Analyses page's downloads."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from . import figures
from .fileio import write_json_atomically, write_text_atomically


def tables(results: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """One flat table per analysis present in ``results`` (see :func:`core.analysis.analyze`)."""
    out: dict[str, pd.DataFrame] = {}
    if "scatter" in results:
        rows = []
        for arch, sc in results["scatter"].items():
            for i, (x, y, m) in enumerate(zip(sc["log10_ape"], sc["log10_cross_entropy"], sc["membership"])):
                row = {"arch": arch, "record": i, "member": m, "log10_ape": x, "log10_cross_entropy": y,
                       # −12 means "at or below 1e-12": flagged, so a reader does not take it for a value
                       "clipped_ape": sc.get("clipped_ape", [None] * (i + 1))[i],
                       "clipped_cross_entropy": sc.get("clipped_cross_entropy", [None] * (i + 1))[i]}
                row.update({f"{name}_decision": a["decision"][i] for name, a in sc["attacks"].items()})
                rows.append(row)
        out["scatter"] = pd.DataFrame(rows)
    for name in ("vulnerability", "overtraining"):
        if name in results:
            out[name] = pd.DataFrame([{"arch": arch, **r} for arch, v in results[name].items() for r in v["rows"]])
    if "memorization" in results:
        out["memorization"] = pd.DataFrame([{"arch": arch, **{k: v for k, v in b.items() if k != "accuracies"}}
                                            for arch, m in results["memorization"].items() for b in m["blocks"]])
    if "mismatch" in results:
        out["mismatch"] = pd.DataFrame([{"arch": arch, "scale": r["scale"], m["knob"]: r[m["knob"]], "attack": name,
                                         "accuracy": acc}
                                        for arch, m in results["mismatch"].items() for r in m["rows"]
                                        for name, acc in r["accuracy"].items()])
    out.update(record_view_tables(results))
    return out


def record_view_tables(results: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Tables of issue 22's views (:mod:`core.record_views`) present in ``results``."""
    out: dict[str, pd.DataFrame] = {}
    if "exposure" in results:
        ex = results["exposure"]
        rows = []
        for i, (index, m) in enumerate(zip(ex["records"], ex["membership"])):
            row: dict[str, Any] = {"record": i, "dataset_index": index, "member": m, "attack": ex["attack"]}
            for arch in ex["archs"]:
                row[f"score_{arch}"] = ex["scores"][arch][i]
                row[f"cross_entropy_{arch}"] = ex["cross_entropy"][arch][i]
            for fpr, q in ex["quadrants"].items():
                row[f"quadrant_at_fpr_{fpr}"] = q["quadrant"][i]
            for arch, by_fpr in ex.get("flips", {}).items():
                for fpr, f in by_fpr.items():
                    row[f"flip_{arch}_at_fpr_{fpr}"] = ("stopped" if i in f["stopped"] else
                                                        "started" if i in f["started"] else "")
            rows.append(row)
        out["exposure"] = pd.DataFrame(rows)
    if "budget" in results:
        out["budget"] = pd.DataFrame([
            {"arch": arch, "attack": name, "n_references": p["n_references"], "draws": p["draws"], "auc": p["auc"],
             "auc_low": p["auc_low"], "auc_high": p["auc_high"],
             **{f"tpr_at_fpr_{f}": v for f, v in p["tpr_at_fpr"].items()},
             **{f"tpr_low_{f}": v for f, v in p["tpr_low"].items()},
             **{f"tpr_high_{f}": v for f, v in p["tpr_high"].items()}, "flattens_at": c["flattens_at"]}
            for arch, view in results["budget"].items() for name, c in view["curves"].items() for p in c["points"]])
    if "audit" in results:
        out["audit"] = pd.DataFrame([
            {"arch": arch, "m": v["m"], "delta": v["delta"], "k": k["k"], "correct": k["correct"],
             "accuracy": k["accuracy"], "epsilon_at_k": k["epsilon"], "audited_epsilon": v["audited_epsilon"],
             "best_k": v["audit"]["best_k"], "accountant_rdp": (v["accountant_epsilon"] or {}).get("rdp"),
             "accountant_prv": (v["accountant_epsilon"] or {}).get("prv"),
             "attack_epsilon_lower_bound": v["attack_epsilon_lower_bound"]}
            for arch, v in results["audit"].items() for k in v["audit"]["per_k"]])
    if "slices" in results:
        out["slices"] = pd.DataFrame([{"arch": arch, "attack": results["slices"]["attack"], **r}
                                      for arch, by in results["slices"]["archs"].items()
                                      for rows in by.values() for r in rows])
    return out


#: each analysis' figure from its results (the scatter, which also takes the attack, is drawn apart)
FIGURE_OF = {
    "vulnerability": figures.vulnerability_figure, "memorization": figures.memorization_figure,
    "overtraining": figures.overtraining_figure, "mismatch": figures.mismatch_figure,
    "exposure": figures.exposure_figure, "budget": figures.budget_figure, "audit": figures.audit_figure,
    "slices": figures.slices_figure,
}


def figures_of(results: dict[str, Any], attack: str | None = None) -> dict[str, go.Figure]:
    """One figure per analysis present in ``results``."""
    out: dict[str, go.Figure] = {}
    if "scatter" in results:
        first = next(iter(results["scatter"].values()))
        name = attack or ("shadow" if "shadow" in first["attacks"] else next(iter(first["attacks"])))
        out["scatter"] = figures.scatter_figure(results["scatter"], name)
    for name, figure in FIGURE_OF.items():
        if name in results:
            out[name] = figure(results[name])
    return out


def write_analyses(results: dict[str, Any], folder: str | Path) -> list[Path]:
    """``<name>.csv`` and ``<name>.html`` per analysis and ``analyses.json``, each written atomically
    and only as a regular file (a link or device planted in the folder is refused, never written
    through: :mod:`core.fileio`); returns the paths."""
    folder = Path(folder)
    written = []
    for name, df in tables(results).items():
        path = folder / f"{name}.csv"
        write_text_atomically(path, df.to_csv(index=False))
        written.append(path)
    for name, fig in figures_of(results).items():
        path = folder / f"{name}.html"
        write_text_atomically(path, fig.to_html(include_plotlyjs=True, full_html=True))  # inlined: opens offline
        written.append(path)
    path = folder / "analyses.json"
    write_json_atomically(path, results)
    written.append(path)
    return written


def html_report(results: dict[str, Any], configs: dict[str, dict], title: str) -> str:
    """One self-contained HTML page: the configs, the computed verdicts and every figure
    (plotly's script inlined once, so the file opens offline)."""
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Verdicts (computed from this run)</h2><ul>"]
    for name, v in results.get("verdicts", {}).items():
        mark = {True: "holds", False: "does not hold", None: "mixed"}[v["holds"]]
        parts.append(f"<li><b>{html.escape(name.replace('_', ' '))}</b>: {mark} — {html.escape(v['text'])}</li>")
    parts.append("</ul>")
    for i, (name, fig) in enumerate(figures_of(results).items()):
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(fig.to_html(include_plotlyjs=(i == 0), full_html=False))
    parts.append("<h2>Configs</h2><pre>" + html.escape(json.dumps(configs, indent=2)) + "</pre>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}}</style></head><body>{body}</body></html>")
