"""The Analyses page's text (core.views.analyses_text) from typed results (core.analyses.analysis_results):
the readers give back the JSON they read, refuse an ill-typed field in one line, and the page's rows say
what the numbers are."""
from __future__ import annotations

import pytest

from core.analyses.analysis_results import AuditView, ExposureView, MemberMeans, Quadrant, Scatter, SlicesView
from core.foundations.errors import ResultFormatError
from core.views import analyses_text

AUDIT = {"arch": "ffnn", "m": 100, "audit": {"epsilon": 1.5, "best_k": 20, "saturated": True, "per_k": []},
         "audited_epsilon": 1.5, "accountant_epsilon": {"rdp": 4.0, "prv": 3.5}, "attack_epsilon_lower_bound": 0.25,
         "attack": "lira", "utility_val": 0.8123,
         "estimators": {"fdp_bound": {"mu": 1.2, "epsilon": None, "best_k": 10},
                        "gdp_estimate": {"saturated": False, "mu": 1.0, "mu_low": 0.5, "mu_high": 1.5,
                                         "epsilon": 2.0, "epsilon_low": 1.0, "epsilon_high": None}},
         "comparability": {"comparable": True, "reason": "both bound one image"}}  # audit_comparability's layout
QUAD = {"a": {"fpr_realised": 0.01}, "b": {"fpr_realised": 0.02}, "quadrant": ["only_a", "only_b", "neither"],
        "members": [{"name": "only_b", "count": 1, "n": 2, "share": 0.5, "share_low": 0.1, "share_high": 0.9,
                     "repeats": 3, "mean_count": 1.0, "count_low": 0.5, "count_high": 1.5}],
        "non_members": [{"name": "only_b", "count": 0, "n": 1, "share": 0.0, "share_low": 0.0, "share_high": 0.9}]}
EXPOSURE = {"attack": "lira", "archs": ["ffnn", "rnn"], "records": [7, 8, 9], "membership": [True, True, False],
            "scores": {"ffnn": [0.1, None, 0.3], "rnn": [0.2, 0.5, 0.1]},
            "cross_entropy": {"ffnn": [1.0, 2.0, 3.0], "rnn": [1.0, 2.0, 3.0]},
            "ape": {"ffnn": [0.1, 0.2, 0.3], "rnn": [0.1, 0.2, 0.3]}, "repeat_seeds": [5, 6],
            "quadrants": {"0.01": QUAD}, "fpr_labels": {"0.01": "1 %"},
            "flips": {"ffnn": {"0.01": {"n_stopped": 2, "n_started": 1, "kept": 3, "n_members": 9, "stopped": [1, 2]}}}}


def test_the_readers_give_back_the_json_read_and_refuse_a_bad_field():
    for cls, d in ((AuditView, AUDIT), (ExposureView, EXPOSURE)):
        assert cls.from_dict(d).to_dict() == d
    with pytest.raises(ResultFormatError, match=r"audit view.audit.best_k must be an integer"):
        AuditView.from_dict({**AUDIT, "audit": {"best_k": "x"}})
    with pytest.raises(ResultFormatError, match="scatter lacks 'quadrant'"):
        Scatter.from_dict({"attacks": {}, "mean_ape": {"members": 1.0, "non_members": 2.0}})


def test_audit_rows_name_the_accountant_and_the_saturated_bound():
    audit = AuditView.from_dict(AUDIT)  # the views take the typed result (read once where the JSON arrives)
    [row] = analyses_text.audit_rows({"ffnn": audit})
    assert row["accountant ε (RDP / PRV)"] == "4 / 3.5" and row["attack ε̂ (lira)"] == 0.25
    assert row["every guess right"] == "yes: m's ceiling" and analyses_text.audit_saturated({"ffnn": audit})
    no_dp = AuditView.from_dict({**AUDIT, "accountant_epsilon": None})
    assert analyses_text.audit_rows({"ffnn": no_dp})[0]["accountant ε (RDP / PRV)"] == "—"
    [est] = analyses_text.estimator_rows({"ffnn": audit})
    assert est["f-DP bound μ ≥ (ε at δ ≥), best k"] == "1.2 (∞), k = 10"  # no finite ε from m canaries
    assert est["Gaussian-DP estimate μ̂ [95 %] (ε̂ [95 %])"] == "1 [0.5, 1.5] (2 [1, ∞])"


def test_exposure_rows_caption_flips_and_the_first_record():
    names = {"only_b": "RNN only"}
    exposure = ExposureView.from_dict(EXPOSURE)
    [row] = analyses_text.quadrant_rows(exposure, "0.01", names)
    assert row["quadrant"] == "RNN only" and row["share"] == "50.0% [10.0%, 90.0%]"
    assert row["mean over 3 repeats [95 %]"] == "1.0 [0.5, 1.5]" and row["non-members (false alarms)"] == 0
    assert "over 3 cached repeats" in analyses_text.exposure_caption(exposure, "0.01")
    assert analyses_text.flip_lines(exposure, "0.01", "Dirichlet k", 10.0) == [
        "**FFNN** behind Dirichlet k = 10: 2 members stop being exposed, 1 start, 3 stay exposed (of 9)."]
    assert analyses_text.first_record(exposure, "0.01") == 1  # a member only the RNN exposes
    index, member, title, notes = analyses_text.record_notes(exposure, 1)
    assert (index, member) == (8, True) and "data index 8" in title and "score — ·" in notes["ffnn"]


def test_slice_rows_say_a_tpr_at_zero_false_positives():
    row = {"slicing": "class", "slice": "class 1", "n_members": 10, "n_non_members": 20, "too_small": True,
           "auc": 0.7, "auc_low": 0.6, "auc_high": 0.8, "tpr_at_1pct": 0.1, "tpr_low": 0.0, "tpr_high": 0.3,
           "tpr_resolved": False, "tpr_note": ""}
    sliced = {"attack": "lira", "min_records": 30, "archs": {"ffnn": {"class": [row]}}}
    typed = SlicesView.from_dict(sliced)
    assert typed.slicings == ["class"]
    [out] = analyses_text.slice_rows(typed, "class")
    assert out["AUC [95 %]"] == "0.700 [0.600, 0.800]" and out["too small"] == "yes"
    assert out["TPR@1 % FPR"].endswith("TPR at 0 false positives (FPR < 1/20)")


def test_a_repeated_verdict_is_typed_and_its_sentence_reads_the_same_from_its_json():
    from core.analyses.verdicts import RepeatedVerdict, RepeatedVerdicts, repeated_verdict_sentence
    from core.measurement.stats import compare

    v = RepeatedVerdict("scatter", "entropy gap", 6, compare("scatter", [0.1, 0.2, 0.15, 0.12, 0.18, 0.11],
                                                             [0.3, 0.35, 0.4, 0.33, 0.38, 0.31], -1))
    block = RepeatedVerdicts(6, (1, 2, 3, 4, 5, 6), {"lower_member_entropy": v}, {"x": "1 of 6 repeats have no y"})
    d = block.to_dict()
    assert list(d) == ["n", "seeds", "verdicts", "missing"] and RepeatedVerdicts.from_dict(d).to_dict() == d
    line = repeated_verdict_sentence(v)
    assert line == repeated_verdict_sentence(RepeatedVerdict.from_dict(d["verdicts"]["lower_member_entropy"]))
    assert "**holds** — entropy gap: FFNN − RNN -0.202 95 % CI [-0.235, -0.168]" in line and "N = 6 repeats; p = " in line
    assert line.startswith("(1) members' entropy below non-members'") and "(above 0)" in line
    assert analyses_text.repeated_line(RepeatedVerdicts.from_dict(d), "lower_member_entropy").startswith("**Over 6 paired repeats:** (1)")
    assert analyses_text.repeated_line(block, "other") is None and analyses_text.repeated_line(None, "x") is None
    text, missing = analyses_text.repeated_summary(block, 6)
    assert "* lower member entropy (scatter): (1)" in text and missing == "1 of 6 repeats have no y"


def test_the_scatter_sentence_reads_what_its_scale_shows():
    """Records where most RNN members sit decades below its non-members (the log view's clouds far apart) while a few
    large-entropy members pull its mean APE up (the linear view's means closer than the FFNN's): each view's sentence
    says what that view shows, not one sentence for both."""
    import numpy as np

    from core.views.analyses_text import scatter_separation

    rng = np.random.default_rng(0)
    member = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    ffnn = np.where(member, -1.2, -0.8) + 0.05 * rng.normal(size=200)  # 0.4 decades apart, means clearly apart
    rnn = np.where(member, -4.0, -0.8) + 0.05 * rng.normal(size=200)  # 3 decades apart at the centres ...
    rnn[:25] = 0.5  # ... but a quarter of its members answer with APE ≈ 3 nats: their mean is above non-members'
    scatters = {a: Scatter(attacks={}, quadrant=Quadrant(accuracy=0.5), mean_ape=MemberMeans(members=0.0, non_members=0.0),
                           membership=tuple(member.tolist()), log10_ape=tuple(v.tolist()))
                for a, v in (("ffnn", ffnn), ("rnn", rnn))}
    log = scatter_separation(scatters, "log")
    linear = scatter_separation(scatters, "linear")
    assert "log view" in log and "decades" in log and "the RNN separates members from non-members more" in log
    assert "linear view" in linear and "nats" in linear and "the FFNN separates members from non-members more" in linear
