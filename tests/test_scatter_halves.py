"""The entropy scatter's claim has two halves: members get lower entropy than
non-members, and the RNN separates them more. One run states both with its numbers and
"inconclusive (one repeat)"; over repeats, each architecture's gap gets its interval and the paired
FFNN − RNN gap its verdict."""
from core.analyses import registry as analysis_registry
from core.analyses import verdicts as analysis_verdicts
from core.analyses.analysis_results import MemberMeans, Quadrant, Scatter


def scatter(members: float, non_members: float) -> Scatter:
    """A scatter with its means only (no records: no interval over them)."""
    return Scatter(attacks={}, quadrant=Quadrant(accuracy=0.5),
                   mean_ape=MemberMeans(members=members, non_members=non_members))


def test_one_run_states_both_halves():
    v = analysis_verdicts.scatter_verdict({"ffnn": scatter(0.10, 0.295), "rnn": scatter(0.20, 0.283)})
    assert v.value == "inconclusive" and "one repeat" in v.text
    assert "below non-members' for FFNN and RNN" in v.text  # half 1
    assert "the RNN separates them less" in v.text and f"{0.195 - 0.083:+.3g}" in v.text  # half 2: FFNN gap larger
    assert abs(v.difference - (0.195 - 0.083)) < 1e-9
    v = analysis_verdicts.scatter_verdict({"ffnn": scatter(0.2, 0.1), "rnn": scatter(0.1, 0.5)})
    assert "below non-members' for RNN (" in v.text and "the RNN separates them more" in v.text


def test_repeats_give_each_half_its_interval():
    # the RNN's gap beats the FFNN's in every one of 6 repeats (6 reach the sign-flip test's 95 %)
    ffnn = [0.10, 0.12, 0.11, 0.09, 0.13, 0.10]
    rnn = [0.30, 0.33, 0.29, 0.31, 0.35, 0.32]
    per_repeat = [{"scatter": {"ffnn": scatter(0.5, 0.5 + f), "rnn": scatter(0.5, 0.5 + r)}} for f, r in zip(ffnn, rnn)]
    out = analysis_verdicts.repeated_verdicts(per_repeat).to_dict()
    v = out["verdicts"][analysis_registry.get_analysis("scatter").verdict]
    assert v["n"] == 6 and v["verdict"]["value"] == "holds"  # FFNN − RNN gap below 0: the RNN separates more
    text = analysis_verdicts.repeated_verdict_sentence(analysis_verdicts.RepeatedVerdict.from_dict(v))
    assert "(1) members' entropy below non-members'" in text and text.count("(above 0)") == 2 and "(2) **holds**" in text
    # the other way round: reversed, and a gap whose interval holds 0 says so
    flipped = [{"scatter": {"ffnn": scatter(0.5, 0.5 + r), "rnn": scatter(0.5, 0.5 + f - 0.11)}}
               for f, r in zip(ffnn, rnn)]
    v = analysis_verdicts.repeated_verdicts(flipped).to_dict()["verdicts"][analysis_registry.get_analysis("scatter").verdict]
    text = analysis_verdicts.repeated_verdict_sentence(analysis_verdicts.RepeatedVerdict.from_dict(v))
    assert v["verdict"]["value"] == "reversed" and "(contains 0)" in text and "(above 0)" in text
