"""Repeats declared before the runs (core.analyses.declared_repeats): each declared N is the one its stated sd,
effect, power and level give (core.measurement.stats.repeats_for_power), so it cannot drift from its rationale."""
from __future__ import annotations

import math

import numpy as np
import pytest

from core.analyses.declared_repeats import DECLARED, declared_for
from core.measurement.stats import power_paired, repeats_for_power
from core.tasks import get_task


def test_power_matches_a_simulated_paired_t_test():
    rng = np.random.default_rng(0)
    from scipy import stats
    n, sd, effect = 8, 1.0, 0.9
    diffs = rng.normal(effect, sd, size=(20000, n))
    p = stats.ttest_1samp(diffs, 0.0, axis=1).pvalue
    assert abs(float(np.mean(p < 0.05)) - power_paired(effect, sd, n)) < 0.015


def test_repeats_for_power_is_the_first_n_that_reaches_it():
    n = repeats_for_power(1.0, 1.0)
    assert n == 10 and power_paired(1.0, 1.0, n) >= 0.8 > power_paired(1.0, 1.0, n - 1)
    assert repeats_for_power(1e-4, 1.0, cap=50) is None


@pytest.mark.parametrize("d", DECLARED, ids=lambda d: f"{d.finding}-{d.task}-{d.preset}")
def test_each_declared_n_is_what_its_rationale_states(d):
    assert d.repeats == repeats_for_power(d.effect, d.sd, d.family, d.power, confidence=1 - d.alpha)
    assert power_paired(d.effect, d.sd, d.repeats, d.family, 1 - d.alpha) >= d.power
    assert f"N = {d.repeats}" in d.rationale
    assert d.preset in get_task(d.task).presets and declared_for(d.finding, d.task, d.preset) is d
    assert math.isfinite(d.effect) and d.to_dict()["repeats"] == d.repeats


def test_cifar_cpu_is_declared_and_others_are_not():
    assert declared_for("F1", "image", "cifar_cpu").repeats == 16
    assert declared_for("F1", "image", "quick") is None
