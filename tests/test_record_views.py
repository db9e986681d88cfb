"""Per-record exposure, the one-run audit, the reference budget and slices: the pure
modules on planted data, then the wiring on a tiny cached image run."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from streamlit.testing.v1 import AppTest

from core.analyses import analysis, record_views
from core.analyses import verdicts as analysis_verdicts
from core.analyses.analysis_results import AuditView, SlicesView
from core.analyses.repeats import repeat_config
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import trained_models
from core.experiment.reference_attacks import lira_scores, online_lira, reference_inputs
from core.experiment.results import RunSummary
from core.foundations.errors import ConfigError
from core.foundations.version import stamped
from core.measurement import audit, budget, exposure, slices
from core.measurement.responses import Responses
from core.tasks import get_task
from core.views import report
from tests.typed_runs import typed_run


# ---------------------------------------------------------------------------- exposure
def test_threshold_at_fpr_allows_at_most_floor_fpr_n_false_positives():
    non = np.arange(200, dtype=float)
    t = exposure.threshold_at_fpr(non, 0.01)
    assert (non > t).sum() == 2
    assert (non > exposure.threshold_at_fpr(non, 0.001)).sum() == 0  # 0.2 of a record: none allowed


def test_quadrant_counts_on_planted_scores():
    # 100 members, 100 non-members; non-members score 0..0.99 under both (threshold at 1 % = 0.98)
    n = 100
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    non = np.linspace(0, 0.99, n)
    a = np.r_[np.zeros(n), non]
    b = np.r_[np.zeros(n), non]
    a[:10] = 5.0            # members 0..9 exposed by A only
    b[10:25] = 5.0          # 10..24 by B only
    a[25:32] = b[25:32] = 5.0  # 25..31 by both
    q = exposure.quadrants(a, b, member, fpr=0.01, label_a="ffnn", label_b="rnn")
    assert q.count("only_a") == 10 and q.count("only_b") == 15 and q.count("both") == 7 and q.count("neither") == 68
    assert sum(c.count for c in q.members) == n
    assert q.count("both", members=False) == 1  # the one non-member allowed above the threshold, in both tables
    c = next(c for c in q.members if c.name == "only_b")
    assert c.share_low < 0.15 < c.share_high and c.n == n
    assert q.quadrant[12] == "only_b" and q.quadrant[3] == "only_a" and q.quadrant[50] == "neither"
    # repeats: the same planted pair twice gives a zero-width interval around the same counts
    rep = exposure.quadrants(a, b, member, fpr=0.01, repeats=[(a, b, member)])
    c = next(c for c in rep.members if c.name == "only_b")
    assert c.repeats == 2 and c.mean_count == 15 and c.count_low == c.count_high == 15


def test_quadrants_refuse_tables_of_different_records():
    with pytest.raises(ValueError, match="same records"):
        exposure.quadrants(np.zeros(4), np.zeros(5), [1, 1, 0, 0])


def test_flips_are_symmetric_and_empty_against_itself():
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    und = rng.normal(size=600) + 1.5 * member
    none = exposure.flips(und, und, member, 0.01)
    assert none.stopped == () and none.started == ()
    dfd = und + rng.normal(scale=1.0, size=600)
    f, back = exposure.flips(und, dfd, member, 0.01), exposure.flips(dfd, und, member, 0.01)
    assert f.stopped == back.started and f.started == back.stopped and (f.stopped or f.started)


# ---------------------------------------------------------------------------- audit
def test_p_value_pure_dp_is_the_binomial_tail():
    eps, r, v = 1.0, 50, 40
    q = math.exp(eps) / (1 + math.exp(eps))
    assert audit.p_value(100, r, v, eps) == pytest.approx(stats.binom.sf(v - 1, r, q))
    assert audit.p_value(100, r, v, eps, 1e-5) > audit.p_value(100, r, v, eps)  # δ only adds


def test_audit_of_randomized_response_is_below_and_close_to_its_epsilon():
    # ε-DP randomized response on each canary's inclusion: the tightest mechanism for this game
    eps, m = 1.0, 20000
    rng = np.random.default_rng(1)
    included = rng.random(m) < 0.5
    truthful = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
    scores = np.where(included == truthful, 1.0, -1.0) + 1e-6 * rng.random(m)  # ties broken at random
    result = audit.audit(scores, included, delta=0.0, k_grid=[m])
    assert result.epsilon <= eps
    assert result.epsilon > 0.9 * eps


def test_audit_of_gaussian_mechanism_never_exceeds_its_epsilon_at_delta():
    mu, delta, m = 1.0, 1e-5, 5000  # each canary: score = μ·[included] + N(0, 1): μ-GDP
    truth = audit.gaussian_mechanism_epsilon(mu, delta)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        included = rng.random(m) < 0.5
        result = audit.audit(mu * included + rng.normal(size=m), included, delta=delta)
        assert 0 < result.epsilon <= truth


def test_audit_stays_below_the_accountant_with_enough_noise_and_is_large_without_it():
    # a DP run with enough noise, synthetic: μ = 0.3 gives ε(δ = 1e-5) ≈ 1.3 by the accountant's exact curve
    mu, delta, m = 0.3, 1e-5, 1000
    accountant = audit.gaussian_mechanism_epsilon(mu, delta)
    rng = np.random.default_rng(3)
    included = rng.random(m) < 0.5
    assert audit.audit(mu * included + rng.normal(size=m), included, delta).epsilon <= accountant
    # a non-private, overfit model: members' loss ≈ 0, non-members' large → every guess right
    loss = np.where(included, rng.uniform(0, 1e-3, m), rng.uniform(2, 5, m))
    overfit = audit.audit(-loss, included, delta)
    assert overfit.epsilon > 4.0 and overfit.per_k[-1].accuracy >= 0.99  # k₊ = k₋ = 500 vs 502 in
    assert not overfit.saturated  # its best k (all 1000) had two wrong guesses (500 "out" guesses, 498 out)
    assert audit.audit(-loss, included, delta, k_grid=[500]).saturated  # every guess right: m's ceiling


def test_audit_bound_monotone_in_correct_guesses():
    values = [audit.epsilon_lower_bound(200, 100, v, 1e-5) for v in (50, 70, 90, 100)]
    assert values[0] == 0.0 and values == sorted(values) and values[-1] > values[-2]


# ---------------------------------------------------------------------------- budget
def _planted_responses(phi: np.ndarray) -> Responses:
    """Binary Responses whose LiRA signal φ = log p − log(1 − p) is ``phi`` (label 0, logits [φ, 0])."""
    logits = torch.tensor(np.stack([phi, np.zeros_like(phi)], 1))
    return Responses.from_logits(logits, np.ones(len(phi), np.int64), torch.zeros(len(phi), dtype=torch.long))


def test_budget_curve_recovers_the_planted_optimum_as_references_grow():
    rng = np.random.default_rng(7)
    n, n_refs, mu = 600, 16, 2.0
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    difficulty = rng.normal(scale=3.0, size=2 * n)
    target = _planted_responses(difficulty + mu * member + rng.normal(size=2 * n))
    refs = [_planted_responses(difficulty + rng.normal(size=2 * n)) for _ in range(n_refs)]
    optimum = stats.norm.cdf(mu / math.sqrt(2))  # the test that knows every record's difficulty exactly

    curve = budget.budget_curve("lira", lambda sub: lira_scores(target, [refs[j] for j in sub]), n_refs, member,
                                resamples=6, minimum=2)
    sizes = [p.n_references for p in curve.points]
    assert sizes == [2, 4, 8, 16]
    aucs = [p.auc for p in curve.points]
    assert aucs[-1] > aucs[0] + 0.01
    assert abs(aucs[-1] - optimum) < 0.03
    # one draw at the full budget: no spread; smaller budgets: several draws
    assert curve.points[-1].draws == 1 and curve.points[0].draws == 6
    assert curve.flattens_at is not None and curve.flattens_at <= 16


def test_budget_subsets_enumerate_or_sample():
    assert budget.subsets(4, 2, 10) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    draws = budget.subsets(16, 4, 5, seed=1)
    assert len(draws) == 5 and len(set(draws)) == 5
    assert budget.budgets(5) == (1, 2, 4, 5) and budget.budgets(4, minimum=2) == (2, 4)
    assert budget.flattening_point([1, 2, 4], [0.6, 0.795, 0.8]) == 2
    # two budgets, or a curve still rising at its last one, show no plateau
    assert budget.flattening_point([2, 4], [0.6, 0.6]) is None
    assert budget.flattening_point([1, 2, 4], [0.6, 0.7, 0.8]) is None


# ---------------------------------------------------------------------------- slices
def test_slices_partition_the_records_and_mark_small_ones():
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    labels = rng.integers(0, 4, 600)
    labels[:5] = 9  # a tiny slice
    labels[300:303] = 9
    scores = rng.normal(size=600) + member * (labels == 1)
    out = slices.slice_metrics("class", [f"class {v}" for v in labels], scores, member, bootstrap=50)
    assert sum(r.n_members + r.n_non_members for r in out) == 600
    assert [r.slice for r in out] == ["class 0", "class 1", "class 2", "class 3", "class 9"]
    tiny = out[-1]
    assert tiny.too_small and tiny.n_members == 5 and tiny.n_non_members == 3
    leaky = out[1]
    assert leaky.auc > 0.65 and leaky.auc_low < leaky.auc < leaky.auc_high and not leaky.too_small


def test_slices_with_too_few_non_members_for_1pct_fpr_say_their_tpr_is_at_zero_false_positives():
    from core.views.run_text import slices_table

    rng = np.random.default_rng(3)
    # slice "a": 20 + 20 (like an image slice) cannot resolve 1 % FPR; slice "b": 150 + 150 can (1 false positive)
    labels = ["a"] * 20 + ["b"] * 150 + ["a"] * 20 + ["b"] * 150
    member = np.r_[np.ones(170, bool), np.zeros(170, bool)]
    scores = rng.normal(size=340) + member
    small, large = slices.slice_metrics("group", labels, scores, member, bootstrap=20)
    assert not small.tpr_resolved and "TPR at 0 false positives (FPR < 1/20)" in small.tpr_note
    # the number is indeed the TPR above the highest non-member
    a = np.array(labels) == "a"
    assert small.tpr_at_1pct == pytest.approx((scores[a & member] > scores[a & ~member].max()).mean())
    assert large.tpr_resolved and large.tpr_note == ""
    cells = list(slices_table(SlicesView.from_dict(
        {"attack": "lira", "min_records": 30, "archs": {"rnn": {"group": [small.to_dict(), large.to_dict()]}}}))["TPR @ 1% FPR [95 % CI]"])
    assert cells[0].endswith("TPR at 0 false positives (FPR < 1/20)") and "false positives" not in cells[1]


@pytest.mark.parametrize("n_m, n_n, levels", [(37, 250, 6), (20, 50, 1000), (5, 99, 3), (12, 301, 40)])
def test_slice_bootstrap_all_at_once_equals_one_resample_at_a_time(n_m, n_n, levels):
    from core.measurement.metrics import roc_auc, tpr_at_fpr

    rng = np.random.default_rng(n_m)
    scores = rng.integers(0, levels, n_m + n_n).astype(float)  # few levels: many ties
    y = np.r_[np.ones(n_m, bool), np.zeros(n_n, bool)]
    aucs, tprs = slices._bootstrap(scores, y, np.random.default_rng(7), 30)
    again = np.random.default_rng(7)  # the same draws, one resample at a time
    mem, non = np.nonzero(y)[0], np.nonzero(~y)[0]
    for a, t in zip(aucs, tprs):
        idx = np.r_[again.choice(mem, n_m), again.choice(non, n_n)]
        assert a == pytest.approx(roc_auc(scores[idx], y[idx]), abs=1e-12)
        assert t == tpr_at_fpr(scores[idx], y[idx], 0.01)


def test_quantile_buckets_partition_a_feature():
    values = np.arange(30)
    b = slices.quantile_buckets(values, 3, " tokens")
    assert len(set(b)) == 3 and len(b) == 30 and b[0] == "[0, 9.66667) tokens"


# ---------------------------------------------------------------------------- wiring on cached runs

ROOT = Path(__file__).resolve().parent.parent
SMALL = dict(n_train=60, n_eval=40, epochs=15, n_shadows=3, attack_epochs=(), attack_train_epochs=5)


def _check_reference_subset(cfg) -> None:
    """ReferenceInputs.subset keeps the chosen shadows and their calibration (on cached models)."""
    inputs = reference_inputs(trained_models(cfg))
    sub = inputs.subset((0, 2))
    assert sub.references == [inputs.references[0], inputs.references[2]]
    assert len(sub.calibration.targets) == 2 and len(sub.calibration.references[0]) == 1
    # shadow 0's reference in the subset is shadow 2, at position 1 of its original others (1, 2)
    assert sub.calibration.references[0][0] is inputs.calibration.references[0][1]
    assert len(sub.calibration.membership) == 2 * len(inputs.calibration.membership) // 3
    with pytest.raises(ValueError):
        inputs.subset((1,))


def test_four_views_on_tiny_cached_image_runs_and_the_page(tmp_path, monkeypatch):
    task = get_task("image")
    configs = {a: task.make_config(a, "quick", SMALL) for a in ("ffnn", "rnn")}
    analysed = analysis.analyze(configs, ("exposure", "budget", "audit", "slices"), canaries=60,
                                defense=("dirichlet", 1.0))
    results = analysed.to_dict()
    ex = results["exposure"]
    assert ex["attack"] in ("lira", "rmia") and len(ex["records"]) == 80
    assert np.array_equal(ex["records"], record_views.evaluated_records(configs["rnn"]))
    for q in ex["quadrants"].values():
        assert sum(c["count"] for c in q["members"]) == 40 and sum(c["count"] for c in q["non_members"]) == 40
    for arch, by_fpr in ex["flips"].items():
        f = by_fpr["0.01"]
        exposed_before = sum(f["undefended"]["exposed"][:40])
        exposed_after = sum(f["defended"]["exposed"][:40])
        assert exposed_before - f["n_stopped"] + f["n_started"] == exposed_after
    for arch, view in results["budget"].items():
        lira = view["curves"]["lira"]
        assert [p["n_references"] for p in lira["points"]] == [2, 3]
        assert lira["points"][0]["draws"] == 3 and lira["points"][1]["draws"] == 1  # C(3, 2) subsets, then all
    for arch, by in results["slices"]["archs"].items():
        rows = by["class"]
        assert sum(r["n_members"] + r["n_non_members"] for r in rows) == 80  # the slices partition the records
        assert all(r["too_small"] for r in rows)  # 8 records per class at this size: all marked
    aud = results["audit"]
    assert aud["ffnn"]["m"] == 60 and aud["ffnn"]["accountant_epsilon"] is None  # non-private: no accountant
    assert aud["ffnn"]["audited_epsilon"] > 1.0  # an overfit non-private CNN memorises mislabeled canaries
    _check_reference_subset(configs["ffnn"])
    written = {p.name for p in report.write_analyses(analysed, tmp_path)}
    assert json.loads((tmp_path / "analyses.json").read_text()) == stamped(results, "analyses")  # the JSON as built
    assert {"exposure.csv", "exposure.html", "budget.csv", "budget.html", "audit.csv", "audit.html", "slices.csv",
            "slices.html"} <= written
    # the CSVs hold the raw rows (one per record / budget point / slice), not the page's display tables
    exposure_csv = pd.read_csv(tmp_path / "exposure.csv")
    assert len(exposure_csv) == len(results["exposure"]["records"])
    assert {"dataset_index", "member", "score_ffnn", "score_rnn"} <= set(exposure_csv.columns)
    assert {"n_references", "auc", "auc_low", "auc_high"} <= set(pd.read_csv(tmp_path / "budget.csv").columns)
    assert {"arch", "attack", "n_members", "n_non_members"} <= set(pd.read_csv(tmp_path / "slices.csv").columns)
    # the Analyses page on the same cached runs (the quick preset shrunk to SMALL: the same configs)
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **SMALL})
    assert {a: task.make_config(a, "quick").config_hash for a in configs} == {a: c.config_hash for a, c in configs.items()}
    at = AppTest.from_file(str(ROOT / "app_pages" / "4_Analyses.py"))
    at.run(timeout=180)
    assert not at.exception, at.exception
    # only the open tab runs: the first (the scatter) until another is opened
    assert not any("Realised FPR" in c.value for c in at.caption)

    def open_tab(label: str) -> None:
        at.session_state["analyses:tab"] = label  # what a click on the tab does
        at.run(timeout=180)
        assert not at.exception, at.exception

    open_tab("Exposure per record")
    assert any("Realised FPR" in c.value for c in at.caption)  # the exposure tab's quadrant table
    open_tab("Slices")
    assert any("too small" in c.value for c in at.caption)  # the slices tab
    assert not any("Realised FPR" in c.value for c in at.caption)
    open_tab("Reference budget")

    def refuse(*args, **kwargs):
        raise AssertionError("the server refitted the budget curves")

    # the refits run in a worker (the analysis job "budget"), never in the server (where they now fail)
    monkeypatch.setattr(record_views, "budget_view", refuse)
    monkeypatch.setattr(analysis, "budget_view", refuse)
    at.toggle(key="budget:on").set_value(True).run(timeout=180)
    assert not at.exception, at.exception
    deadline = time.time() + 240
    while not any("flattens at" in c.value or "no plateau seen" in c.value for c in at.caption):
        assert time.time() < deadline, [e.value for e in at.error]
        assert not at.error, [e.value for e in at.error]
        time.sleep(0.5)  # the worker's job; the page reads its result on the next run
        at.run(timeout=180)
        assert not at.exception, at.exception
    open_tab("Exposure per record")
    at.radio(key="exposure:defense").set_value("Dirichlet k").run(timeout=180)
    assert not at.exception, at.exception
    assert any("stop being exposed" in m.value for m in at.markdown)
    assert any("Record " in m.value for m in at.markdown)  # the selected record is shown


def test_audited_epsilon_of_a_dp_sgd_run_stays_below_its_accountant():
    cfg = get_task("image").make_config("ffnn", "quick", dict(SMALL, epochs=5, dp="sigma", dp_noise_multiplier=3.0))
    out = record_views.canary_audit(cfg, 100).to_dict()
    eps = out["accountant"]["epsilons"]
    assert out["audit"]["epsilon"] <= min(eps["rdp"], eps["prv"])
    assert out["n_train"] == 60 + sum(out["included"])
    assert record_views.canary_audit(cfg, 100).to_dict() == out  # cached: the same run, not a retraining


def test_per_record_views_refuse_different_records_and_bad_canaries():
    task = get_task("image")
    a, b = task.make_config("ffnn", "quick", SMALL), task.make_config("rnn", "quick", dict(SMALL, seed=1))
    with pytest.raises(ConfigError, match="different records"):
        record_views.check_same_records({"ffnn": a, "rnn": b})
    with pytest.raises(ConfigError, match="canaries must lie"):
        record_views.canary_audit(a, 100_000)
    with pytest.raises(ConfigError, match="two architectures"):  # refused before anything trains
        analysis.analyze({"ffnn": a}, ("exposure",))
    with pytest.raises(ConfigError, match="at least 2 canaries"):
        analysis.analyze({"ffnn": a}, ("audit",), canaries=1)


def test_a_run_without_an_attacks_per_record_scores_is_a_config_error_not_a_crash():
    """The views read per-record scores and columns through one check: a run without them is refused with a
    ConfigError (which the run report lists under ``skipped``), not a TypeError on None."""
    with pytest.raises(ConfigError, match="ffnn lira has no per-record scores"):
        record_views._scores(None, "ffnn lira")
    with pytest.raises(ConfigError, match="without a score"):
        record_views._scores([0.1, None], "ffnn lira")
    assert record_views._scores([0.5, 0.25], "x").tolist() == [0.5, 0.25]
    with pytest.raises(ConfigError, match="rnn APE has no per-record values"):
        record_views._column(None, "rnn APE")
    assert record_views._column((1.0, 2.0), "rnn APE") == [1.0, 2.0]


def test_translation_canaries_are_mismatched_pairs():
    task = get_task("translation")
    cfg = task.make_config("rnn", "quick")
    data = task.load(cfg)
    index = np.array([3, 10, 42, 77])
    canary = task.canary_data(cfg, data, index, np.random.default_rng(0))
    rec, new = data.records, canary.records
    assert [new.src_text[i] for i in index] == [rec.src_text[i] for i in index]  # sources kept
    assert sorted(new.tgt_text[i] for i in index) == sorted(rec.tgt_text[i] for i in index)  # targets rotated
    assert all(new.tgt_text[i] != rec.tgt_text[i] for i in index)
    assert new.tgt_text[5] == rec.tgt_text[5] and rec.tgt_text is not new.tgt_text  # others and the source untouched


#: a navigation recipe of seconds: 2 member maps, 2 PPO updates of 4 × 64 frames
NAV_TINY = dict(n_train=2, n_eval=2, epochs=1, n_shadows=1, attack_epochs=(), attack_train_epochs=2, frames=512,
                n_envs=4, frames_per_env=64, batch_size=64)


def test_navigation_canaries_are_maps_with_a_moved_hidden_goal():
    from core.data.minigrid import MapEnv
    from core.data.planner import GOAL

    task = get_task("navigation")
    cfg = task.make_config("ffnn", "quick", NAV_TINY)
    data = task.load(cfg)
    index = np.array([5, 9, 30])
    canary = task.canary_data(cfg, data, index, np.random.default_rng(0))
    assert canary.records.canaries == frozenset(data.records.seeds[index].tolist()) and not data.records.canaries
    env = MapEnv(cfg.dataset)
    goals = {}
    for seed in data.records.seeds[index]:
        for marked in (frozenset(), canary.records.canaries):
            env.canaries = marked
            env.reset(int(seed))
            goals[int(seed), bool(marked)] = np.argwhere(env.grid_code[..., 0] == GOAL).tolist()
            # the view never shows a canary's goal; the full grid (the planner's) holds exactly one
            assert len(goals[int(seed), bool(marked)]) == 1
            assert not marked or not (env._padded[..., 0] == GOAL).any()
        assert goals[int(seed), True] != goals[int(seed), False]  # a canary map is not the ordinary map
    # the planner routes to the hidden goal: following it ends the episode with MiniGrid's reward
    from core.data.planner import PlannerCache
    planner, env.canaries = PlannerCache(), canary.records.canaries
    env.reset(int(data.records.seeds[index[0]]))
    for _ in range(env.max_steps):
        obs, reward, done, truncated = env.step(int(np.argmax(planner.policy(env.grid_code, *env.agent_state))))
        assert not (obs[..., 0] == GOAL).any()
        if done or truncated:
            break
    assert done and reward > 0


def test_navigation_one_run_audit_reports_the_bound_of_its_canaries_answers(tmp_path, monkeypatch):
    """A tiny navigation canary run whose victim answers are planted after training: every canary
    it trained on answered with cross-entropy 0, every other with 5 — a perfect guess. The audit
    must score those answers against the coins it flipped and report that guess's bound (> 0; the
    same answers reversed would bound ε by 0), not a number from elsewhere."""
    import dataclasses

    task = get_task("navigation")
    cfg = task.make_config("rnn", "quick", NAV_TINY)
    trained: set[int] = set()
    real_train, real_respond = record_views.train_model, task.respond

    def train_and_note(task_, cfg_, data_, index, *args, **kwargs):
        trained.update(int(i) for i in index)
        return real_train(task_, cfg_, data_, index, *args, **kwargs)

    def planted_answers(cfg_, model, data_, index, **kwargs):
        answers = real_respond(cfg_, model, data_, index, **kwargs)
        loss = np.array([0.0 if int(i) in trained else 5.0 for i in index])
        return dataclasses.replace(answers, cross_entropy=np.repeat(loss, answers.lengths).astype(np.float32))

    monkeypatch.setattr(record_views, "train_model", train_and_note)
    monkeypatch.setattr(task, "respond", planted_answers)
    out = record_views.canary_audit(cfg, 16, cache=ArtifactCache(tmp_path)).to_dict()
    assert out["design"].startswith("maps with an unusual layout") and out["accountant"] is None
    included = np.asarray(out["included"], bool)
    assert out["m"] == 16 and included.tolist() == [c in trained for c in out["canaries"]]
    assert out["scores"] == [0.0 if i else -5.0 for i in included]  # −loss of each canary, in order
    assert out["n_train"] == 2 + included.sum()
    perfect = audit.audit(np.where(included, 1.0, 0.0), included, out["delta"]).epsilon
    assert perfect > 0 and audit.audit(np.where(included, 0.0, 1.0), included, out["delta"]).epsilon == 0
    assert out["audit"]["epsilon"] == pytest.approx(perfect, rel=1e-12)


def test_exposure_takes_an_interval_over_cached_repeats_of_other_seeds():
    task = get_task("image")
    configs = {a: task.make_config(a, "quick", SMALL) for a in ("ffnn", "rnn")}
    rng = np.random.default_rng(0)
    member = [True] * 40 + [False] * 40

    def attack(name, auc):
        return {"name": name, "accuracy": 0.5, "advantage": 0.0, "auc": auc, "tpr_at_fpr": {}}

    def fake(cfg):  # a summary of the shape the pipeline caches, with planted per-record scores
        return {"task": "image", "arch": cfg.arch, "config": cfg.to_dict(), "config_hash": cfg.config_hash,
                "params": 1, "utility": {"metric": "accuracy"}, "attack": attack("shadow", 0.5),
                "attacks": {"shadow": attack("shadow", 0.5), "lira": attack("lira", 0.7)},
                "per_epoch": [], "timings": {},
                "records": {"membership": member, "ape": [0.1] * 80, "cross_entropy": [0.1] * 80, "length": [1] * 80,
                            "scores": {"lira": list(rng.normal(size=80) + 2 * np.asarray(member))}}}

    cache = ArtifactCache()
    for r, archs in ((1, ("ffnn", "rnn")), (2, ("ffnn",))):  # repeat 2 lacks its RNN: not a repeat pair
        for arch in archs:
            cfg = repeat_config(configs[arch], r)
            cache.put_json(cache.key("result", cfg.config_hash), fake(cfg))
    repeats = record_views.cached_repeats(configs, cache)
    seed_1 = repeat_config(configs["ffnn"], 1).seed
    assert [p["ffnn"].config["seed"] for p in repeats] == [seed_1]
    summaries = {a: RunSummary.from_dict(fake(c)) for a, c in configs.items()}
    view = record_views.exposure_view(configs, summaries, "lira", repeats=repeats).to_dict()
    assert view["repeat_seeds"] == [seed_1]
    c = view["quadrants"]["0.01"]["members"][0]
    assert c["repeats"] == 2 and c["count_low"] <= c["mean_count"] <= c["count_high"]


def test_online_lira_budget_curve_over_its_in_out_models():
    cfg = get_task("image").make_config("ffnn", "quick", dict(SMALL, n_shadows=2, epochs=8))
    view = record_views.budget_view(cfg, resamples=3, online=2).to_dict()
    online = view["curves"]["lira_online"]
    assert [p["n_references"] for p in online["points"]] == [2, 4]  # of 2 IN/OUT models + 2 shadows
    # 2 of 4 references: the 3 resampled subsets; all 4: the one full set, which is online LiRA itself
    assert [p["draws"] for p in online["points"]] == [3, 1]
    full = online_lira(trained_models(cfg), n_models=2)
    assert online["points"][-1]["auc"] == pytest.approx(full.result.auc)


def test_translation_slicings_cover_every_record():
    task = get_task("translation")
    cfg = task.make_config("rnn", "quick")
    records = record_views.evaluated_records(cfg)
    labels = record_views.slice_labels(cfg, records, typed_run({"records": {"length": [1] * len(records)}}))
    assert set(labels) == {"source length", "rarest source word frequency"}
    for values in labels.values():
        assert len(values) == len(records) and 1 <= len(set(values)) <= 3
    nav = record_views.slice_labels(get_task("navigation").make_config("rnn", "quick"), np.arange(4),
                                    typed_run({"records": {"length": [3, 9, 27, 81]}}))
    assert len(set(nav["query episode length"])) == 3


def test_worker_runs_audit_and_budget_jobs_and_refuses_bad_params():
    from core.jobs.worker import run_job

    cfg = get_task("image").make_config("ffnn", "quick", dict(SMALL, epochs=5, n_shadows=2))
    events = []
    out = run_job("analysis", cfg, events.append, {"name": "audit", "canaries": 20})
    assert out["m"] == 20 and len(out["scores"]) == 20 and events  # progress reported (a cancel checkpoint)
    with pytest.raises(ConfigError, match="canaries must be an integer"):
        run_job("analysis", cfg, events.append, {"name": "audit", "canaries": 10**9})
    with pytest.raises(ConfigError, match="online must be an integer"):
        run_job("analysis", cfg, events.append, {"name": "budget", "online": "4"})


@pytest.mark.parametrize("args, message", [
    (["--analysis", "exposure", "--archs", "ffnn"], "two architectures"),
    (["--analysis", "exposure", "--defense", "nope:1"], "mechanism"),
    (["--analysis", "audit", "--canaries", "1"], "at least 2"),
])
def test_analyze_cli_refuses_bad_view_options_before_any_work(tmp_path, args, message):
    out = tmp_path / "never"
    p = subprocess.run([sys.executable, "-m", "core", "analyze", "--task", "image", *args, "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and message in p.stderr, p.stderr
    assert not out.exists()  # refused before the folder was created


def test_audit_verdict_checks_the_accountant_on_dp_runs_only():
    def entry(eps, acc=None, saturated=False, comparable=True):  # audit_beside's layout, the verdict's fields varied
        return AuditView.from_dict({
            "audited_epsilon": eps, "accountant_epsilon": acc, "audit": {"best_k": 10, "saturated": saturated},
            "attack": "lira", "attack_epsilon_lower_bound": 0.0, "utility_val": 0.5,
            "estimators": {"fdp_bound": {}, "gdp_estimate": {}},
            "comparability": {"comparable": comparable, "reason": "canary a map, DP-SGD one window"}})

    v = analysis_verdicts.audit_verdict({"ffnn": entry(0.2, {"rdp": 2.7, "prv": 2.5}), "rnn": entry(0.0, {"rdp": 2.7, "prv": 2.4})})
    assert v.value == "holds" and "stays within" in v.text
    v = analysis_verdicts.audit_verdict({"ffnn": entry(3.0, {"rdp": 2.7, "prv": 2.5}), "rnn": entry(0.0, {"rdp": 2.7, "prv": None})})
    assert v.value == "reversed" and "EXCEEDS" in v.text
    v = analysis_verdicts.audit_verdict({"ffnn": entry(2.27, saturated=True), "rnn": entry(1.1)})
    assert v.value == "inconclusive" and "saturated" in v.text and "no accountant" in v.text
    # a canary map against DP-SGD's 16-frame window is no comparison, whichever is larger
    for audited in (0.2, 3.0):
        v = analysis_verdicts.audit_verdict({a: entry(audited, {"rdp": 2.7, "prv": 2.5}, comparable=False) for a in ("ffnn", "rnn")})
        assert v.value == "inconclusive" and "not comparable" in v.text
        assert "stays within" not in v.text and "EXCEEDS" not in v.text


def test_audit_comparability_follows_the_tasks_privacy_unit():
    from core.measurement.audit import audit_comparability
    from core.tasks import get_task

    nav, image = get_task("navigation"), get_task("image")
    assert not nav.privacy_unit_is_record and image.privacy_unit_is_record
    apart = audit_comparability("one map", nav.privacy_unit, nav.privacy_unit_is_record)
    assert apart["comparable"] is False and "one map" in apart["reason"] and "window" in apart["reason"]
    assert audit_comparability("one image", image.privacy_unit, True)["comparable"] is True
