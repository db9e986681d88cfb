"""The HTML report of an audit of a user's own model (:mod:`core.analyses.user_audit`): one self-contained page,
built from the :class:`~core.analyses.user_audit.AuditOutcome` alone with the tables and ROC figure of the scores
report. Every string the user gave (paths, ids, class names) is escaped.
"""
from __future__ import annotations

import datetime as _dt
import html
import json

from core.analyses.user_audit import AuditOutcome
from core.views.scores_report import _CSS, _table, roc_loglog_figure
from core.views.style import estimate_text


def audit_report_html(outcome: AuditOutcome) -> str:
    """The whole page (module docstring)."""
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    res, roles, check = outcome.scores, outcome.roles.to_dict(), outcome.check
    spec = html.escape(str(outcome.model["spec"]))
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>MIA Explorer: audit of {spec}</title><style>{_CSS}</style></head><body>",
             f"<h1>Membership inference audit: {spec}</h1>",
             f"<p class='muted'>Written {when}. {roles['records']} records: {roles['members']} members, "
             f"{roles['nonmembers']} non-members audited, {roles['pool']} in the attacker's pool "
             f"({html.escape(roles['rule'])}).</p>"]
    if outcome.defense:
        parts.append("<p><b>What-if defense:</b> " + html.escape(json.dumps(outcome.defense, ensure_ascii=False)) + "</p>")
    parts += ["<h2>The model on its own members</h2>",
              f"<p>{html.escape(check.message)}. Mean loss: members {check.member_loss:.4f}, non-members "
              f"{check.nonmember_loss:.4f}" + (f"; stated training accuracy {check.stated_accuracy:.3f}"
                                               if check.stated_accuracy is not None else "") + ".</p>",
              "<ul class='muted'>" + "".join(f"<li>{html.escape(n)}</li>" for n in outcome.model.get("notes", [])) +
              "</ul>"]
    b = outcome.blind
    parts += ["<h2>Blind baseline</h2>",
              f"<p>AUC {estimate_text(b.auc)} (N = {b.auc.n}) from the records alone, never the model. " +
              (f"<b>{html.escape(b.warning)}</b>" if b.differs else "Its interval contains 0.5: no sign that members "
               "and non-members differ in distribution.") + "</p>"]
    rows = []
    for a in res.attacks:
        tprs = "; ".join(f"{r.label}: {estimate_text(r.estimate)}" for r in a.low_fpr)
        rows.append([a.name, a.finding, estimate_text(a.auc), tprs, estimate_text(a.advantage),
                     f"{a.epsilon.lower_bound:.3f}", str(a.auc.n)])
    parts += ["<h2>Attacks</h2>",
              _table(["attack", "finding", "AUC [95 % CI]", "TPR at low FPR [95 % CI]", "advantage TPR − FPR",
                      "ε̂ (95 % lower bound)", "N"], rows),
              "<ul class='muted'>" + "".join(f"<li><b>{html.escape(a.name)}</b>: {html.escape(a.description)}</li>"
                                              for a in res.attacks) + "</ul>"]
    if outcome.not_run:
        parts += ["<h2>Attacks that did not run</h2><ul>"] + [
            f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in outcome.not_run.items()] + ["</ul>"]
    if res.comparisons:
        parts += ["<h2>AUC differences (paired)</h2>",
                  _table(["difference", "AUC difference [95 % CI]", "N", "verdict"],
                         [[f"{c.a} - {c.b}", estimate_text(c.difference), str(c.difference.n), c.verdict]
                          for c in res.comparisons])]
    if outcome.risk:
        r0 = outcome.risk[0]
        parts += [f"<h2>Risk at {r0.fpr:.1%} FPR, membership prior {r0.prior:.3f}</h2>",
                  _table(["attack", "TPR [95 % CI]", "precision of flagged records [95 % CI]",
                          "members exposed [95 % CI]", "expected false flags"],
                         [[r.attack, estimate_text(r.tpr) + ("" if r.resolved else " (0 false positives allowed)"),
                           estimate_text(r.precision), estimate_text(r.members_exposed, 1), f"{r.false_flags:.1f}"]
                          for r in outcome.risk])]
    parts += ["<h2>ROC</h2>", roc_loglog_figure(res).to_html(full_html=False, include_plotlyjs=True,
                                                              config={"displaylogo": False})]
    if outcome.notes:
        parts += ["<h2>Notes</h2><ul>"] + [f"<li>{html.escape(n)}</li>" for n in outcome.notes] + ["</ul>"]
    method = {"preprocess": outcome.preprocess, "recipe": outcome.recipe, **outcome.method}
    parts += ["<h2>Method</h2><pre>" + html.escape(json.dumps(method, indent=2, ensure_ascii=False, default=str)) +
              "</pre>", "</body></html>"]
    return "\n".join(parts)
