"""The comparison JSON read typed: ``ComparisonResult.from_dict`` gives back exactly the dict read (its ROC bands
typed), and the views that print it (verdict lines, the comparison table) take the typed comparison and read its
attributes — schema 2 (roles, Holm) and a comparison written before roles (schema 1) alike."""
from __future__ import annotations

import copy
import json

import pytest

from core.analyses.comparison_results import ComparisonResult
from core.foundations.errors import ResultFormatError
from core.measurement.bootstrap import RocBand
from core.views.repeat_figures import comparison_table
from core.views.run_text import verdict_lines


def _est(mean: float, lo: float, hi: float, n: int = 3) -> dict:
    return {"mean": mean, "ci_low": lo, "ci_high": hi, "n": n, "values": [mean] * n, "sd": 0.1, "method": "t",
            "confidence": 0.95, "note": ""}


def _metric(role: str | None, label: str | None, verdict: str | None, p_holm: float | None = None,
            why: str | None = None) -> dict:
    d = {"metric": "x", "ffnn": _est(0.6, 0.5, 0.7), "rnn": _est(0.7, 0.6, 0.8),
         "difference": {"of": "ffnn - rnn", "a": _est(0.6, 0.5, 0.7), "b": _est(0.7, 0.6, 0.8),
                        "diff": _est(-0.1, -0.2, -0.05), "p_t": 0.02, "p_permutation": 0.25,
                        "permutation_exact": True, "effect_size": -1.5, "n": 3},
         "verdict": None if verdict is None else {"value": verdict, "expected": -1, "effect": -0.1, "ci_low": -0.2,
                                                  "ci_high": -0.05, "effect_size": -1.5, "n": 3, "reason": ""}}
    if role is not None:
        d.update(role=role, label=label)
        if p_holm is not None:
            d["p_holm"] = {"p_t": p_holm, "p_permutation": p_holm, "family": 2}
        if why is not None:
            d["no_verdict_reason"] = why
    return d

def _band(n: int = 3) -> dict:
    return {"fpr": [0.0, 0.01, 1.0], "tpr": [0.1, 0.3, 1.0], "lo": [0.0, 0.2, 1.0], "hi": [0.2, 0.4, 1.0], "n": n,
            "method": "t over 3 repeats", "confidence": 0.95}


SCHEMA_2 = {
    "comparison_schema": 2, "task": "image", "preset": "quick", "repeats": 3,
    "resolution": {"ffnn": {"n_members": 20, "n_nonmembers": 20}, "rnn": {"n_members": 20, "n_nonmembers": 20}},
    "primary": {"metric": "attack_auc", "label": "attack AUC", "why": "declared first"},
    "secondary": {"metrics": ["attack_accuracy", "tpr_at_1pct_fpr"], "correction": "Holm"},
    "no_verdict": {"attack_advantage": "2·accuracy − 1", "tpr_at_0.1pct_fpr": "finer than the data"},
    "metrics": {"attack_auc": _metric("primary", "attack AUC", "holds"),
                "attack_accuracy": _metric("secondary", "attack accuracy", "inconclusive", 0.5),
                "tpr_at_1pct_fpr": _metric("secondary", "TPR @ 1% FPR", None),
                "attack_advantage": _metric("duplicate", "advantage (TPR−FPR)", None, why="2·accuracy − 1"),
                "tpr_at_0.1pct_fpr": _metric("unresolved", "TPR at 0 false positives (FPR < 1/20)", None,
                                             why="finer than the data"),
                "utility_val": _metric("utility", "utility (validation)", None)},
    "roc_band": {"ffnn": _band(), "rnn": _band()},
}


def test_the_comparison_reads_back_to_the_same_json():
    comp = ComparisonResult.from_dict(copy.deepcopy(SCHEMA_2))
    assert json.dumps(comp.to_dict()) == json.dumps(SCHEMA_2)  # keys, order and values
    assert comp.repeats == 3 and comp.primary.metric == "attack_auc" and comp.has_roles
    assert comp.n_nonmembers() == {"ffnn": 20, "rnn": 20}
    assert comp.roc_band is not None and comp.roc_band["rnn"] == RocBand.from_dict(_band())  # the bands typed
    m = comp.metrics["attack_accuracy"]
    assert m.p_holm_permutation == 0.5 and m.verdict.value == "inconclusive" and m.estimate("ffnn")["mean"] == 0.6
    bad = copy.deepcopy(SCHEMA_2)
    bad["metrics"]["attack_auc"]["difference"]["n"] = "three"
    with pytest.raises(ResultFormatError, match=r"comparison\.metrics\['attack_auc'\]\.difference\.n must be an integer"):
        ComparisonResult.from_dict(bad)
    bad = copy.deepcopy(SCHEMA_2)
    del bad["roc_band"]["rnn"]["lo"]
    with pytest.raises(ResultFormatError, match=r"comparison\.roc_band\['rnn'\] lacks 'lo'"):
        ComparisonResult.from_dict(bad)
    bad["roc_band"]["rnn"] = {**_band(), "extra": 1}  # a key the band would not write back: refused
    with pytest.raises(ResultFormatError, match=r"comparison\.roc_band\['rnn'\] has unknown key 'extra'"):
        ComparisonResult.from_dict(bad)


def test_verdict_lines_and_table_of_a_judged_comparison():
    comp = ComparisonResult.from_dict(SCHEMA_2)
    lines = verdict_lines(comp)
    assert lines[0] == ("**Primary — attack AUC**: holds — FFNN − RNN -0.100 [-0.200, -0.050], d_z = -1.50, "
                        "p (paired t) 0.020, p (sign flip) 0.250, N = 3 — primary: declared first")
    assert lines[1] == "Secondary, sign-flip p Holm-adjusted over 1: attack accuracy inconclusive (Holm p 0.500)"
    assert lines[2] == ("No verdict: advantage (TPR−FPR) (2·accuracy − 1); TPR @ 0.1% FPR: TPR at 0 false positives "
                        "(FPR < 1/20), a rate finer than the data")
    table = comparison_table(comp)
    assert list(table["metric"])[:2] == ["attack AUC", "attack accuracy"]  # the primary first
    assert list(table["verdict: RNN leaks more"]) == ["holds", "inconclusive", "(no hypothesis)", "— (no verdict)",
                                                     "— (no verdict)", "(no hypothesis)"]
    assert table["p (sign flip, Holm)"][1] == "0.500" and table["p (sign flip, Holm)"][0] == "—"


def test_a_comparison_written_before_roles_keeps_one_line_per_metric():
    old = {"repeats": 3, "metrics": {"attack_accuracy": _metric(None, None, "holds"),
                                     "attack_auc": _metric(None, None, "reversed"),
                                     "utility_val": _metric(None, None, None)}}
    comp = ComparisonResult.from_dict(old)
    assert not comp.has_roles and comp.to_dict() == old
    assert [line.split(":")[0] for line in verdict_lines(comp)] == ["**attack accuracy**", "**attack AUC**"]
    assert "role" not in comparison_table(comp).columns


def test_a_repeats_block_reads_its_band_typed_and_writes_it_back():
    from core.experiment.results import RepeatsBlock
    from core.measurement.stats import mean_interval
    from core.views.repeat_figures import roc_band_figure

    block = {"n": 3, "seeds": [0, 1, 2], "config_hashes": ["a", "b", "c"],
             "metrics": {"attack_auc": mean_interval([0.5, 0.6, 0.7]).to_dict()},
             "roc_band": {**_band(), "fpr": [0.0, 0.05, 1.0]},
             "resolution": {"n_members": 20, "n_nonmembers": 20}}
    b = RepeatsBlock.from_dict(copy.deepcopy(block))
    assert isinstance(b.roc_band, RocBand) and b.roc_band.n == 3 and b.roc_band.tpr == (0.1, 0.3, 1.0)
    assert json.dumps(b.to_dict()) == json.dumps(block)  # the run summary's repeats block as read
    fig = roc_band_figure({"ffnn": b.roc_band}, {"ffnn": b.n_nonmembers})
    assert fig.data[1].name == "FFNN: mean of N = 3, 95% band" and list(fig.data[1].x) == [0.05, 1.0]  # down to 1/20
    with pytest.raises(ResultFormatError, match=r"repeats\.roc_band\.n must be an integer"):
        RepeatsBlock.from_dict({**block, "roc_band": {**_band(), "n": "3"}})
