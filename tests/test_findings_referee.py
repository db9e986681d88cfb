"""Findings a referee would sign: each row can decide at the N it asks for, never decides at unmatched utility,
reads "uninformative" at a ceiling, and every reader of one cache gives the same answer.

One cache (repeat 0 of the tiny image comparison trained, then N planted repeats as in test_findings_holm) is read by
the Home page's answer, ``compare --cached``, the Analyses page's verdict over repeats, the findings table's F1 row
and the run report: the same word everywhere. Each test fails on the code before the one answer existed (Home
headlined LiRA AUC, Analyses judged attack accuracy without Holm, findings printed "reversed" at unmatched utility
and asked for N = 6 in a Holm family of 5)."""
import copy
import json

import numpy as np
import pytest

from core.analyses.answer import cached_answer
from core.analyses.findings import findings_table
from core.analyses.repeats import comparison_configs, repeat_config, run_comparison
from core.analyses.verdicts import repeated_verdicts
from core.cli.main import main
from core.experiment import roles
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary
from core.experiment.results import RunSummary
from core.measurement.stats import compare, decidable_at, power_paired, repeats_for_power
from core.tasks import get_task

TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=2, attack_epochs=(1,), attack_train_epochs=3)
N = 8


def _plant(leak, utility, n=N):
    """Repeats 0 … N−1 as copies of the trained repeat 0 with planted numbers: ``leak(arch, r)`` the leakage
    numbers (accuracy, every AUC), ``utility(arch, r)`` the train and validation utility."""
    configs = comparison_configs("image", "quick", 1, TINY)
    run_comparison(configs)
    cache = ArtifactCache()
    stored = {a: cache.get_json(cache.key("result", c.config_hash)) for a, c in configs.items()}
    for r in range(n):
        for arch, cfg in configs.items():
            rc = repeat_config(cfg, r)
            s = copy.deepcopy(stored[arch])
            s["config"] = {**s["config"], "seed": rc.seed}
            s["config_hash"], s["training_hash"] = rc.config_hash, rc.training_hash
            v = leak(arch, r)
            for a in (s["attack"], s["attacks"][s["attack"]["name"]]):
                a["accuracy"], a["auc"], a["advantage"] = v, v, 2 * v - 1
            for name in ("lira", "rmia"):
                s["attacks"][name]["auc"] = v
            s["utility"]["train"] = s["utility"]["val"] = utility(arch, r)
            cache.put_json(cache.key("result", rc.config_hash), s)
    return configs


@pytest.fixture
def tiny_quick(monkeypatch):
    task = get_task("image")
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})


def _readers(configs, tmp_path, monkeypatch):
    """The word each reader gives on the cache: Home / compare --cached, the Analyses page, F1, the run report."""
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: pytest.fail("a reader trained"))
    home = cached_answer("image", "quick")
    out = tmp_path / "answer.json"
    assert main(["compare", "--cached", "--quiet", "--out", str(out)]) == 0
    cli = json.loads(out.read_text())
    # the Analyses page's verdicts over the cached repeats (analyses_view hands each repeat's runs to this)
    per_repeat = [{"runs": {a: RunSummary.from_dict(cached_summary(repeat_config(c, r))) for a, c in configs.items()}}
                  for r in range(N)]
    analyses = repeated_verdicts(per_repeat).to_dict()["verdicts"]["rnn_more_vulnerable"]["verdict"]["value"]
    f1 = next(r for r in findings_table(["image"], "quick").rows if r.finding == "F1")
    report = tmp_path / "report.html"
    assert main(["report", "--task", "image", "--no-budget", "--quiet", "--out", str(report)]) == 0
    return {"home": home.verdict, "compare --cached": cli["verdict"], "analyses": analyses, "findings": f1.verdict,
            "report": report.read_text()}, f1


def test_every_reader_gives_the_same_answer_and_unmatched_utility_is_not_comparable(tiny_quick, tmp_path, monkeypatch):
    # the RNN leaks less at every repeat (a "reversed" on the numbers) — but its utility is 20 % lower
    configs = _plant(lambda a, r: 0.60 + 0.02 * r + (0.05 + 0.01 * r if a == "ffnn" else 0.0),
                     lambda a, r: 0.9 if a == "ffnn" else 0.7)
    words, f1 = _readers(configs, tmp_path, monkeypatch)
    report = words.pop("report")
    assert set(words.values()) == {"not comparable"}, words
    assert "not comparable" in report
    assert f1.matched == {"train": False, "validation": False, "matched": False, "unsettled": False,
                          "gaps": f1.matched["gaps"]}
    assert f1.missing == ()  # a row that cannot decide even when run is not queued
    assert "cannot decide even when run" in f1.design_note


def test_utility_matching_not_settled_yet_queues_the_repeats_that_can_settle_it(tiny_quick, tmp_path, monkeypatch):
    """Not comparable only because the gaps' intervals are wide (each reaches past ±5 % and into it): more repeats
    can settle the matching, so the row queues the runs up to its target instead of saying it can never decide."""
    from core.analyses.arch_answer import UtilityMatch
    from core.measurement.stats import Estimate

    def gap(mean, low, high):
        return Estimate(mean=mean, ci_low=low, ci_high=high, n=3)
    assert UtilityMatch("train", 0.60, 0.64, gap(-0.04, -0.21, +0.13), False).unsettled  # reaches into ±0.032
    assert not UtilityMatch("train", 0.60, 0.70, gap(-0.10, -0.15, -0.05), False).unsettled  # wholly outside
    assert not UtilityMatch("train", 0.60, 0.70, gap(-0.10, None, None), False).unsettled  # one repeat: as measured
    # a noisy utility: the RNN's alternates ±0.2 around the FFNN's steady 0.8 — the gap's mean is near 0, but its
    # interval spans about ±0.2 where the band is ±0.05 × 1.0; N = 4 is below the row's target
    configs = _plant(lambda a, r: 0.60 + 0.02 * r + (0.05 + 0.01 * r if a == "ffnn" else 0.0),
                     lambda a, r: 0.8 if a == "ffnn" else 0.8 + (0.2 if r % 2 else -0.2), n=4)
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: pytest.fail("the table trained"))
    f1 = next(r for r in findings_table(["image"], "quick").rows if r.finding == "F1")
    assert f1.n == 4 and f1.verdict == "not comparable"
    assert f1.matched["matched"] is False and f1.matched["unsettled"] is True
    assert "not settled yet" in f1.verdict_reason and "not shown matched" in f1.verdict_reason
    assert f1.target_repeats > 4 and "not comparable yet" in f1.design_note
    assert sorted((m.config.arch, m.config.seed) for m in f1.missing) == sorted(
        (a, repeat_config(c, r).seed) for a, c in configs.items() for r in range(4, f1.target_repeats))
    # read at its target N and still unsettled: the design's answer is "not comparable", nothing more is queued
    _plant(lambda a, r: 0.60 + 0.02 * r + (0.05 + 0.01 * r if a == "ffnn" else 0.0),
           lambda a, r: 0.8 if a == "ffnn" else 0.8 + (0.2 if r % 2 else -0.2), n=f1.target_repeats)
    again = next(r for r in findings_table(["image"], "quick").rows if r.finding == "F1")
    assert again.n == f1.target_repeats and again.verdict == "not comparable" and again.matched["unsettled"]
    assert again.missing == () and "still not settled" in again.design_note


def test_matched_utility_gives_one_word_everywhere_and_the_row_decides_at_its_floor(tiny_quick, tmp_path, monkeypatch):
    configs = _plant(lambda a, r: 0.60 + 0.02 * r + (0.05 + 0.01 * r if a == "ffnn" else 0.0), lambda a, r: 0.9)
    words, f1 = _readers(configs, tmp_path, monkeypatch)
    report = words.pop("report")
    assert set(words.values()) == {"reversed"}, words  # N = 8 reaches Holm's floor in the family of F1's metric
    assert "reversed" in report
    assert f1.decidable_at == decidable_at(len(f1.family)) and len(f1.family) >= 2 and f1.decidable_at > 6
    assert f1.target_repeats >= f1.decidable_at and f1.n == N
    row = f1.to_dict()  # the findings JSON contract
    for key in ("finding", "task", "preset", "metric", "expected_sign", "family", "decidable_at", "target_repeats",
                "n", "matched", "verdict", "machine"):
        assert key in row, key
    assert row["machine"] and all("torch" in m for m in row["machine"])


def test_saturated_rows_read_uninformative(tiny_quick, tmp_path, monkeypatch):
    configs = _plant(lambda a, r: 0.995 + (0.001 * r if a == "ffnn" else 0.0), lambda a, r: 0.9)
    words, f1 = _readers(configs, tmp_path, monkeypatch)
    words.pop("report")
    assert set(words.values()) == {"uninformative"}, words
    assert f1.missing == () and "cannot decide" in f1.design_note


def test_no_target_below_decidable_and_no_unmatched_row_decides(tiny_quick):
    table = findings_table(None, "quick")  # an empty cache: every row declared, none measured
    for row in table.rows:
        assert row.decidable_at is not None and row.target_repeats >= row.decidable_at, row.finding
        assert row.spec and row.spec["quote"] and row.spec["cite"], row.finding
        if row.matched is not None and row.matched.get("matched") is False:
            assert row.verdict not in ("holds", "reversed")
    f1 = next(r for r in table.rows if r.finding == "F1" and r.task == "image")
    assert f1.decidable_at == decidable_at(len(f1.family)) > 6  # attack accuracy sits in a Holm family


def test_target_has_eighty_percent_power_with_the_real_rule():
    """The power behind target_repeats, checked by simulating the verdict rule itself (t interval, exact
    sign-flip test, Holm's factor over a family of 5)."""
    n = repeats_for_power(-0.07, 0.05, 5)
    assert n >= decidable_at(5) and power_paired(-0.07, 0.05, n, 5) >= 0.8
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        d = rng.normal(-0.07, 0.05, n)
        c = compare("x", d, np.zeros(n), -1)
        hits += c.verdict.value == "holds" and 5 * max(c.difference.p_t, c.difference.p_permutation) <= 0.05
    assert hits / 200 >= 0.72  # 0.8 within the simulation's spread


def test_f5_is_a_slope_over_three_regulariser_values(tiny_quick):
    """F5 reads the paper's claim (the lines' slopes), not one λ: per repeat the attack accuracy's fall per decade
    of λ over three λ (PPO clip ε for navigation), and the row asks for all three points of every repeat."""
    from core.analyses.findings import F5_CLIP_GRID, F5_LAMBDAS
    from core.analyses.findings_defenses import sensitivity
    from tests.typed_runs import typed_run

    runs = [typed_run({"attack": {"name": "shadow", "accuracy": a}}) for a in (0.8, 0.7, 0.6)]
    assert sensitivity(F5_LAMBDAS, log=True, stronger_when_larger=True)(None, runs) == pytest.approx(0.1)
    # PPO: a smaller clip ε is stronger, so an accuracy that rises with ε is a positive sensitivity
    assert sensitivity(F5_CLIP_GRID, log=False, stronger_when_larger=False)(None, runs[::-1]) > 0
    table = findings_table(["image", "navigation"], "quick")
    for task, grid, mech in (("image", F5_LAMBDAS, "l2"), ("navigation", F5_CLIP_GRID, "clip")):
        f5 = next(r for r in table.rows if r.finding == "F5" and r.task == task)
        points = [m for m in f5.missing if m.what.startswith(mech)]
        assert len(points) == 2 * len(grid) * f5.target_repeats, task
        assert "slope" in f5.spec["metric"] and not f5.spec["not_built"]


def test_f4_same_sigma_must_be_the_same_epsilon():
    """F4's claim is at the same ε: where the same σ gives the two architectures different ε (another number of
    steps: multi30k_cpu's LSTM trains 28 epochs, the Transformer 18), the row reads not comparable."""
    from core.analyses.findings_defenses import _epsilons_apart

    assert _epsilons_apart({"ffnn": [(2.0, 1.0)], "rnn": [(2.0, 1.005)]}) is None
    why = _epsilons_apart({"ffnn": [(2.0, 1.0)], "rnn": [(2.6, 1.3)]})
    assert why is not None and "same ε" in why
