"""An interval across repeats names only values the metric can take: an accuracy's upper end is 1, BLEU's 100
(compare on 2 tiny repeats showed a train accuracy of "0.333 [0.000, 1.392]"); a return keeps no upper end."""
import pytest

from core.analyses.repeats import aggregate, headline_bounds
from core.experiment.results import runs


def _summary(metric: str, train: float, seed: int) -> dict:
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    return {"task": "image", "arch": "ffnn", "config": {"seed": seed}, "config_hash": f"h{seed}", "params": 1,
            "utility": {"metric": metric, "train": train, "val": train / 2}, "attack": attack,
            "attacks": {"shadow": attack}, "per_epoch": [], "timings": {}, "records": {}}


@pytest.mark.parametrize("metric, values, high", [("accuracy", (0.0, 0.6667), 1.0), ("bleu", (10.0, 95.0), 100.0),
                                                  ("return", (0.1, 0.9), None)])
def test_a_utilitys_interval_is_clipped_to_its_metrics_range(metric, values, high):
    summaries = [_summary(metric, v, seed) for seed, v in enumerate(values)]
    e = aggregate(runs(summaries))["utility_train"]
    assert headline_bounds("utility_train", runs(summaries)) == (0.0, high)
    assert e.ci_low == 0.0 and "clipped" in e.note
    unclipped = e.mean + 12.706 * abs(values[1] - values[0]) / 2  # t(0.975, 1) · s / √2
    if high is None:
        assert e.ci_high == pytest.approx(unclipped, rel=1e-3)
    else:
        assert unclipped > high and e.ci_high == high


def test_mixed_utility_metrics_keep_the_generic_bounds():
    mixed = runs([_summary("accuracy", 0.5, 0), _summary("return", 3.0, 1)])
    assert headline_bounds("utility_val", mixed) == (0.0, None)
    assert headline_bounds("attack_auc", mixed) == (0.0, 1.0)
