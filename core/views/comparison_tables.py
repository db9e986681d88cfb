"""The honest-comparison tables of a run: Shokri's shadow attack beside LiRA and RMIA, the shadows'
fidelity to the victim and the matched-utility view (both measured by :mod:`core.experiment.fidelity`;
the matched view is computed by the caller and passed in)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from core.experiment.fidelity import MatchedUtility
from core.experiment.fidelity_results import FidelityUtility, UtilityPair
from core.experiment.results import RunSummary
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES, ATTACK_SHORT, UTILITY_NAMES
from core.views.run_figures import low_fpr_cells


def strongest_attacks_table(summaries: list[RunSummary]) -> pd.DataFrame:
    """Per architecture: Shokri's shadow attack beside LiRA and RMIA (AUC, TPR at 1 % and 0.1 % FPR)."""
    pairs = [(s, name, s.attacks[name]) for s in summaries
             for name in ("shadow", "loss_threshold", "lira", "rmia", "lira_online") if name in s.attacks]
    rows = []
    for (s, name, r), tprs in zip(pairs, low_fpr_cells([r for _, _, r in pairs])):
        rows.append({"architecture": ARCH_NAMES.get(s.arch, s.arch), "attack": ATTACK_NAMES.get(name, name),
                     "AUC": r.auc, "accuracy": r.accuracy, **tprs, "non-members": r.n_nonmembers})
    return pd.DataFrame(rows)


def shadow_fidelity_table(summaries: list[RunSummary]) -> pd.DataFrame:
    """Per architecture and checkpoint: the victim's and the shadows' mean member / non-member loss
    and the relative gaps (core.experiment.fidelity; above 25 % the shadows do not track the victim)."""
    rows = []
    for s in summaries:
        block = s.shadow_fidelity
        if not block:
            continue
        tol = block.loss_tolerance if block.loss_tolerance is not None else 0.25
        for c in block.checkpoints or ():
            v, sh = c.victim, c.shadows
            gaps = [g for g in (c.member_loss_gap, c.nonmember_loss_gap) if g is not None]
            # the epoch as text: the column also holds "final utility", and a mixed column makes Arrow fail and
            # Streamlit fall back (logging a traceback) on every rerun of the page
            rows.append({"architecture": ARCH_NAMES.get(s.arch, s.arch), "epoch": str(c.epoch),
                         "victim member loss": v.member_loss, "shadows member loss": sh.member_loss,
                         "member gap": c.member_loss_gap,
                         "victim non-member loss": v.nonmember_loss, "shadows non-member loss": sh.nonmember_loss,
                         "non-member gap": c.nonmember_loss_gap,
                         "tracks the victim": "yes" if gaps and max(gaps) <= tol else "no"})
        u = block.utility or FidelityUtility()
        metric = UTILITY_NAMES.get(u.metric, u.metric) if u.metric is not None else None
        if u.shadow_mean and u.shadow_mean.to_dict():  # a mean over shadows ({} without shadows)
            victim = u.victim or UtilityPair()
            rows.append({"architecture": ARCH_NAMES.get(s.arch, s.arch), "epoch": "final utility",
                         "victim member loss": None, "shadows member loss": None, "member gap": None,
                         "victim non-member loss": None, "shadows non-member loss": None, "non-member gap": None,
                         "tracks the victim": (f"{metric} train/val: victim {victim.train:.3g}/"
                                               f"{victim.val:.3g}, shadows {u.shadow_mean.train:.3g}/"
                                               f"{u.shadow_mean.val:.3g}")
                         if victim.train is not None else ""})
    return pd.DataFrame(rows)


def matched_utility_table(view: MatchedUtility | None, attacks: tuple[str, ...] = ("shadow", "loss_threshold")
                          ) -> pd.DataFrame:
    """The matched-utility view ``view`` (:func:`core.experiment.fidelity.matched_utility` of the run's summaries,
    computed by the caller): for each architecture, the checkpoint whose validation utility is closest to the
    other's final one, beside the other at its final epoch, with each attack's AUC and TPR@1 % at those epochs
    and which architecture leaks more there."""
    rows: list[dict[str, Any]] = []
    if not view:
        return pd.DataFrame(rows)
    metric = UTILITY_NAMES.get(view.metric, view.metric)
    for k, pair in enumerate(view.pairs, 1):
        for side, m in (("matched", pair.matched), ("reference", pair.reference)):
            row = {"comparison": k, "architecture": ARCH_NAMES.get(m.arch, m.arch), "epoch": m.epoch,
                   f"validation {metric}": m.utility_val}
            for name in attacks:
                a = m.attacks.get(name)
                row[f"{ATTACK_SHORT.get(name, name)} AUC"] = a.auc if a else None
                row[f"{ATTACK_SHORT.get(name, name)} TPR@1%"] = a.tpr_at_1pct_fpr if a else None
            if side == "matched":
                verdict = ", ".join(f"{ATTACK_SHORT.get(n, n)}: {ARCH_NAMES.get(w, w)}"
                                    for n, w in pair.more_leaky.items() if n in attacks)
                row["utility gap"] = pair.utility_gap
                row["leaks more (AUC)"] = verdict if pair.within_tolerance else f"no fair match ({verdict})"
            else:
                row["utility gap"], row["leaks more (AUC)"] = None, ""
            rows.append(row)
    return pd.DataFrame(rows)
