"""With repeats cached, no number of repeat 0 passes for the result: the Train &
attack page finds the cached repeats even with the form at one repeat (a reload), its Overview labels
repeat 0 as "repeat 1 of N" beside the means with their intervals, and the report says the same."""
from test_repeats_app import TINY, WIDGETS, open_page

from core.analyses.comparison_results import ComparisonResult
from core.analyses.repeats import comparison_configs, comparison_json, repeat_configs, run_comparison
from core.experiment.pipeline import run_experiment
from core.experiment.results import RunSummary
from core.measurement.stats import Estimate
from core.views.repeat_figures import RepeatsView
from core.views.report import run_report_html
from core.views.run_figures import overview_table
from core.views.style import with_ci


def test_cached_repeats_are_shown_after_a_reload_and_repeat_0_is_labelled():
    configs = comparison_configs("image", "quick", 2, TINY)
    run_comparison(configs)  # 2 paired repeats in the cache (Home's "Add repeats" or the CLI)
    runs = {a: [RunSummary.from_dict(run_experiment(c).summary) for c in repeat_configs(cfg)] for a, cfg in configs.items()}
    comp = comparison_json(runs["ffnn"], runs["rnn"])

    at = open_page({**WIDGETS, "repeats": 1})  # the form as a reload leaves it: one repeat
    assert any(s.value == "FFNN vs RNN over 2 paired repeats" for s in at.subheader)
    overview = at.dataframe[0].value
    assert "attack accuracy (repeat 1 of 2)" in overview.columns
    by_arch = overview.set_index("architecture")
    for arch, label in (("ffnn", "FFNN"), ("rnn", "RNN")):
        assert by_arch.loc[label, "attack accuracy (repeat 1 of 2)"] == runs[arch][0].attack.accuracy
        assert by_arch.loc[label, "attack accuracy, mean of 2 [95 % CI]"] == with_ci(
            Estimate.from_dict(comp["metrics"]["attack_accuracy"][arch]))
    assert any("repeat 1 of 2" in c.value for c in at.caption)  # the tabs say which run they draw

    page = run_report_html([runs["ffnn"][0], runs["rnn"][0]], list(configs.values()), {}, None,
                           RepeatsView(comparison=ComparisonResult.from_dict(comp)))
    assert "attack accuracy (repeat 1 of 2)" in page and "attack accuracy, mean of 2 [95 % CI]" in page
    assert "verdicts over 2 paired repeats" in page and "repeat 0" not in page


def test_one_repeat_has_no_repeat_label():
    s = [RunSummary.from_dict(run_experiment(c).summary) for c in comparison_configs("image", "quick", 1, TINY).values()]
    table = overview_table(s)
    assert "attack accuracy" in table.columns and not any("repeat" in c or "mean of" in c for c in table.columns)
