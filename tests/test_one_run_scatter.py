"""One run's entropy-scatter sentence states a direction only where the records show one:
on a tiny run the untrained RNN answered every record near ln 10, and its "gap" of +8.33e-07 nats —
one stored APE's last (6th significant) digit over 12 records — was reported as "members' mean APE below
non-members' for FFNN and RNN". Each gap now carries a 95 % bootstrap interval over the records."""
import math

import numpy as np

from core.analyses import verdicts as analysis_verdicts
from core.analyses.analysis_results import MemberMeans, Quadrant, Scatter


def _scatter(ape: np.ndarray, member: np.ndarray) -> Scatter:
    return Scatter(attacks={}, quadrant=Quadrant(accuracy=0.5), log10_ape=tuple(np.log10(ape).tolist()),
                   membership=tuple(member.tolist()),
                   mean_ape=MemberMeans(members=float(ape[member].mean()), non_members=float(ape[~member].mean())))


def test_a_gap_at_the_stored_rounding_is_no_direction():
    member = np.r_[np.ones(12, bool), np.zeros(12, bool)]
    rng = np.random.default_rng(0)
    ffnn = np.where(member, rng.uniform(0.01, 0.2, 24), rng.uniform(0.5, 1.5, 24))  # members clearly lower
    near = float(f"{math.log(10):.6g}")  # 2.30259: every RNN answer uniform, stored to 6 significant digits
    rnn = np.full(24, near)
    rnn[12] = near + 1e-5  # one non-member one step up: the whole "gap" is this rounding step
    v = analysis_verdicts.scatter_verdict({"ffnn": _scatter(ffnn, member), "rnn": _scatter(rnn, member)})
    assert v.value == "inconclusive" and "one repeat" in v.text
    assert "below non-members' (95 % interval over records above 0) for FFNN (" in v.text  # FFNN only, not RNN
    assert "FFNN and RNN" not in v.text
    gap_rnn = rnn[~member].mean() - rnn[member].mean()
    assert 0 < gap_rnn < 1e-6 and f"RNN {gap_rnn:+.3g} [" in v.text  # the RNN's number, with its interval
    assert "the RNN separates them less" in v.text  # FFNN's gap exceeds the RNN's in every resample
    other = np.where(member, rng.uniform(0.01, 0.2, 24), rng.uniform(0.5, 1.5, 24))  # the same law, other draws
    both = analysis_verdicts.scatter_verdict({"ffnn": _scatter(ffnn, member), "rnn": _scatter(other, member)})
    assert "for FFNN and RNN (" in both.text and "no difference between the architectures shown" in both.text
    same = analysis_verdicts.scatter_verdict({"ffnn": _scatter(ffnn, member), "rnn": _scatter(ffnn * 1.01, member)})
    assert "the RNN separates them more" in same.text  # paired: 1 % more on the same records, in every resample
