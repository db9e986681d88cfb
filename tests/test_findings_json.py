"""The findings table is typed from birth (:class:`FindingsTable` of :class:`FindingRow`) and its JSON
and Markdown stayed what they were. This pins the JSON's layout — every row kind's keys in their order, the
cells' keys, the private in-memory fields never written — the round trip through ``from_dict``, and the
Markdown of a table with every kind of row against the text the dict-reading views wrote (at commit feb74e8,
before the rows were typed). No model trains here: the rows are built from planted numbers."""
import dataclasses
import json

from core.analyses.findings import findings_table
from core.analyses.findings_base import (
    FINDINGS,
    DecideBlock,
    DecideEntry,
    FindingRow,
    FindingsTable,
    MeasuredCell,
    Missing,
    PaperClaim,
    RuleCell,
    RuleVerdict,
    UtilityGap,
    finding_row,
)
from core.experiment.cache import ArtifactCache
from core.measurement.metrics import resolution
from core.measurement.stats import compare, mean_interval
from core.tasks import get_task
from core.views.findings_report import findings_markdown

FFNN = [0.60, 0.62, 0.61, 0.65, 0.63, 0.64]
RNN = [0.70, 0.69, 0.73, 0.71, 0.72, 0.74]
HEAD = ["finding", "claim", "task", "preset", "source", "status"]
#: each row kind's keys, in order, as the dict-built table wrote them (read off `python -m core findings --preset
#: quick` at feb74e8 and off its row builders for the kinds no cached run there had: F1a without LiRA, F3 measured)
KEYS = {
    ("F1", "measured"): HEAD + ["metric", "measured", "resolution", "utility_gap", "utility_metric", "config_hashes",
                                "paper", "n", "target_repeats", "missing", "missing_time", "command", "decide"],
    ("F1", "not run"): HEAD + ["metric", "to_decide_note", "paper", "n", "target_repeats", "missing",
                               "missing_time", "command", "decide"],
    ("F1a", "measured"): HEAD + ["metric", "measured", "primary", "resolution", "utility_gap", "utility_metric",
                                 "config_hashes", "paper", "n", "target_repeats", "missing", "missing_time", "command",
                                 "decide"],
    ("F1a", "not run"): HEAD + ["metric", "note", "paper", "n", "target_repeats", "missing", "missing_time", "command",
                                "decide"],
    ("F2", "measured"): HEAD + ["measured", "paper", "metric", "n", "target_repeats", "missing", "missing_time",
                                "command", "decide"],
    ("F3", "measured"): HEAD + ["measured", "paper", "metric", "n", "target_repeats", "rule", "missing",
                                "missing_time", "command", "decide"],
    ("F3", "not run"): HEAD + ["paper", "metric", "n", "target_repeats", "rule", "missing", "missing_time", "command",
                               "decide"],
    ("F4", "not run"): HEAD + ["paper", "metric", "n", "target_repeats", "missing", "missing_time", "command", "decide"],
    ("F5", "no preset"): HEAD + ["n", "target_repeats", "missing", "missing_time", "command", "note", "decide"],
}
#: the findings JSON contract: every row ends with these keys, after its
#: own; a key the row already wrote keeps its place
CONTRACT = ("metric", "expected_sign", "family", "decidable_at", "target_repeats", "target_sized_by", "n", "matched",
            "verdict", "verdict_reason", "machine", "design_note", "spec", "beside")
KEYS = {k: list(v) + [c for c in CONTRACT if c not in v] for k, v in KEYS.items()}


def _table() -> FindingsTable:
    """A table with every kind of row: measured F1 (a Holm-adjusted secondary metric, with the translation note),
    F1a (LiRA primary, RMIA secondary; no utility gap), F2, F3; F1a without LiRA/RMIA; F3 without the study's
    row; F4 not run with a missing job; a task without the preset."""
    cfg = get_task("image").make_config("ffnn", "quick")
    job = Missing(cfg, "experiment", None, "run ffnn repeat 5", 42.0)
    analysis = Missing(cfg, "analysis", {"name": "memorization"}, "memorization ffnn repeat 0", None)
    plain = MeasuredCell.of(compare("attack_accuracy", FFNN, RNN, -1, bounds=(0.0, 1.0)))
    holm = {"p_t": 0.02, "p_permutation": 0.0625, "family": 3}
    secondary = dataclasses.replace(plain, role="secondary", p_holm=holm)
    lira = dataclasses.replace(MeasuredCell.of(compare("lira_auc", RNN, FFNN, -1)), role="primary")
    gap = UtilityGap(0.81, 0.8, mean_interval([0.01, 0.0, 0.02, 0.01, 0.0, 0.01]), 0.0123, True, "matched when …")
    at = DecideBlock(-0.0867, 6, 0, 0.0)
    decide = (DecideEntry("attack_accuracy", 6, 0.0137, 84.0, None, "the study gives no number", at, "the fewest N"),)
    study = DecideBlock(-0.07, 9, 3, 252.0, "001 §5.1: attack accuracy 91 % (MLP) − 98 % (LSTM)")
    decide_study = (DecideEntry("lira_auc", 6, 0.02, 84.0, study, "", DecideBlock(0.0867, 6, 0, None), "the fewest N"),)
    acc, loss = mean_interval([0.52, 0.5, 0.51, 0.49, 0.53, 0.5]), mean_interval([0.02, 0.03, 0.01, 0.02, 0.02, 0.04])
    common = dict(n=6, target_repeats=6, missing=(), missing_time="", command="python -m core compare --task image")
    context = dict(resolution=resolution(20, 20), utility_metric="accuracy", config_hashes={"ffnn": ("a1", "a2"),
                                                                                          "rnn": ("b1", "b2")})
    rows = (
        finding_row(FINDINGS["F1"], "image", "quick", status="measured", metric="attack_accuracy", measured=secondary,
                    utility_gap=gap, paper=PaperClaim("paper 000, Fig. 4", "the RNN leaks more"), decide=decide,
                    **context, **common),
        finding_row(FINDINGS["F1"], "navigation", "quick", status="not run", metric="attack_accuracy",
                    to_decide_note="needs a GPU", paper=PaperClaim("paper 001, §5.1", "MLP 91 %, LSTM 98 %", 0.91, 0.98),
                    **{**common, "n": 0, "missing": (job,), "missing_time": "≈ 42 s on this machine"}),
        finding_row(FINDINGS["F1a"], "image", "quick", status="measured", metric="lira_auc, rmia_auc",
                    measured={"lira_auc": lira, "rmia_auc": secondary}, primary="lira_auc", utility_gap=None,
                    paper=PaperClaim("—", ""), decide=decide_study, **context, **common),
        finding_row(FINDINGS["F1a"], "translation", "quick", status="not run", metric="lira_auc, rmia_auc",
                    note="the cached runs have no LiRA/RMIA numbers (they need n_shadows ≥ 2)",
                    paper=PaperClaim("—", ""), **common),
        finding_row(FINDINGS["F2"], "image", "quick", status="measured", paper=PaperClaim("paper 000, Fig. 6", "forgets"),
                    metric="attack accuracy on the first block learned", measured=plain, decide=decide,
                    **{**common, "missing": (analysis,), "missing_time": "time unknown"}),
        finding_row(FINDINGS["F3"], "navigation", "quick", status="measured",
                    measured=RuleCell(acc, loss, RuleVerdict("holds", 6, "within the rule")),
                    paper=PaperClaim("paper 001, Table 1", "k = 1: attack 50.59 %", attack_accuracy=0.5059,
                                     utility_loss=0.0175), metric="RNN attack accuracy", rule="holds: …", **common),
        finding_row(FINDINGS["F3"], "translation", "quick", status="not run", paper=PaperClaim(""),
                    metric="RNN attack accuracy", rule="holds: …", **{**common, "n": 0}),
        finding_row(FINDINGS["F4"], "image", "quick", status="not run", paper=PaperClaim("paper 000, Fig. 8", "ε"),
                    metric="utility loss", **{**common, "n": 0, "missing": (job,)}),
        finding_row(FINDINGS["F5"], "navigation", "cifar_cpu", status="no preset", n=0, target_repeats=6, missing=(),
                    missing_time="", command="", note="task navigation has no preset 'cifar_cpu' (quick)"),
    )
    return FindingsTable("quick", ("quick",), {}, ("image", "translation", "navigation"), 6, "0123456789ab", rows)


def test_every_row_kind_writes_todays_keys_in_todays_order():
    data = _table().to_dict()
    assert list(data) == ["preset", "presets", "sets", "tasks", "target_repeats", "commit", "rows"]
    for row in data["rows"]:
        assert list(row) == KEYS[(row["finding"], row["status"])], (row["finding"], row["status"])
        assert not any(k.startswith("_") for k in row)  # nothing in-memory (jobs, repeat items) is written
    f1, nav, f1a, _, f2, f3, f3_none, f4, _ = data["rows"]
    assert list(f1["measured"]) == ["ffnn", "rnn", "difference", "p_permutation", "verdict", "role", "p_holm"]
    assert list(f2["measured"]) == ["ffnn", "rnn", "difference", "p_permutation", "verdict"]  # its own family
    assert list(f1a["measured"]) == ["lira_auc", "rmia_auc"] and f1a["utility_gap"] is None
    assert list(f1["utility_gap"]) == ["ffnn", "rnn", "gap", "relative", "matched", "rule"]
    assert list(f3["measured"]) == ["attack_accuracy", "utility_loss", "verdict"]
    assert list(f3["measured"]["verdict"]) == ["value", "n", "reason"]
    assert list(f1["paper"]) == ["text", "cite"] and list(nav["paper"]) == ["text", "cite", "ffnn", "rnn"]
    assert list(f3["paper"]) == ["cite", "text", "attack_accuracy", "utility_loss"] and f3_none["paper"] == {"cite": ""}
    assert list(f1["decide"][0]) == ["metric", "n", "sd", "per_repeat_s", "study", "study_note", "at_measured",
                                     "formula"]
    assert list(f1["decide"][0]["at_measured"]) == ["difference", "repeats", "more", "expected_s"]
    assert list(f1a["decide"][0]["study"]) == ["difference", "repeats", "more", "expected_s", "source"]
    assert f4["missing"] == [_table().rows[7].missing[0].to_dict()]
    assert list(f4["missing"][0]) == ["config_hash", "task", "arch", "seed", "kind", "params", "what", "expected_s",
                                      "config"]
    assert f1["measured"]["difference"] == FindingRow.from_dict(f1).measured.difference.to_dict()
    json.dumps(data, allow_nan=False)


def test_the_table_reads_back_from_its_json_unchanged():
    data = _table().to_dict()
    back = FindingsTable.from_dict(json.loads(json.dumps(data)))
    assert back.to_dict() == data
    assert findings_markdown(back) == findings_markdown(_table())
    assert back.rows[0].measured.p_holm == {"p_t": 0.02, "p_permutation": 0.0625, "family": 3}
    assert back.rows[7].missing[0].config.config_hash == _table().rows[7].missing[0].config.config_hash


#: a row of nothing cached, by finding: its keys in order (F1 on translation adds ``to_decide_note`` after ``metric``)
_NR = HEAD + ["metric", "paper", "n", "target_repeats", "missing", "missing_time", "command", "decide"]
NOT_RUN = {"F1": _NR + [c for c in CONTRACT if c not in _NR], "F1a": _NR + [c for c in CONTRACT if c not in _NR],
           "F3": KEYS[("F3", "not run")]}


def test_an_empty_caches_table_writes_todays_keys(tmp_path):
    """The real builders (nothing cached: every row not run; a task without the preset: "no preset")."""
    empty = ArtifactCache(tmp_path / "cache")
    for table in (findings_table(None, "quick", cache=empty),
                  findings_table(["image", "navigation"], "cifar_cpu", cache=empty)):
        data = table.to_dict()
        for row in data["rows"]:
            if row["status"] == "no preset":
                expected = KEYS[("F5", "no preset")]
            else:
                expected = list(NOT_RUN.get(row["finding"], KEYS[("F4", "not run")]))
                if row["finding"] == "F1" and row["task"] == "translation":
                    expected.insert(expected.index("metric") + 1, "to_decide_note")
            assert list(row) == expected, (row["finding"], row["task"], row["status"])
        assert FindingsTable.from_dict(json.loads(json.dumps(data))).to_dict() == data


#: what the dict-reading views at feb74e8 (core/views/findings_report.py before the rows were typed) printed
#: for :func:`_table`'s JSON: the typed views must print it character for character
MARKDOWN_AT_FEB74E8 = r"""# The studies' findings on this machine

Presets quick; tasks image, translation, navigation; commit 0123456789ab; `python -m core findings --preset quick`. Target N = 6 repeats (the fewest with which the exact sign-flip test can reach 95 %). Read from the cache only; nothing was trained to make this table. Repeats to decide: the fewest N ≥ 6 with t(N−1, 0.975) × sd / √N < |difference| (sd: the measured spread of the paired differences), for the study's difference where it prints one and for the difference measured here; the time from this machine's measured runs.

| finding | task | claim | paper | measured here (95 % CI, N) | verdict | preset · resolution | utility gap | repeats to decide (95 % CI narrower than the difference) | command / runs needed |
|---|---|---|---|---|---|---|---|---|---|
| F1 | image | the RNN is more vulnerable than the FFNN at matched size and utility | the RNN leaks more (paper 000, Fig. 4) | FFNN 0.625 [0.605, 0.645], RNN 0.715 [0.695, 0.735]; FFNN − RNN -0.090 [-0.113, -0.067], N = 6 | holds (difference -0.090 (95 % CI [-0.113, -0.067], N = 6; sign-flip p = 0.0312) excludes 0 in the expected direction) | quick · 20 + 20 eval records (one record = 0.05 TPR) | accuracy FFNN 0.810 vs RNN 0.800, gap +0.008 [+0.000, +0.016]: matched (±5 %) | the study gives no number; at the measured difference \|Δ\| = 0.0867: N = 6 (sd 0.0137 over N = 6) | python -m core compare --task image |
| F1 | navigation | the RNN is more vulnerable than the FFNN at matched size and utility | MLP 91 %, LSTM 98 % (paper 001, §5.1) | not run (nothing cached) | — (not run) | quick | — | needs a GPU | python -m core compare --task image — needs for N = 6: 1 run; ≈ 42 s on this machine |
| F1a | image | the attacker's view: F1 holds under LiRA and RMIA as well as under the studies' Shokri attack | (—) | lira_auc: FFNN 0.715 [0.695, 0.735], RNN 0.625 [0.605, 0.645]; FFNN − RNN +0.090 [+0.067, +0.113], N = 6; rmia_auc: FFNN 0.625 [0.605, 0.645], RNN 0.715 [0.695, 0.735]; FFNN − RNN -0.090 [-0.113, -0.067], N = 6 | reversed (primary: lira_auc; rmia_auc: holds after Holm) | quick · 20 + 20 eval records (one record = 0.05 TPR) | — | lira_auc: study \|Δ\| = 0.07: N = 9, 3 more ≈ 4 min here (001 §5.1: attack accuracy 91 % (MLP) − 98 % (LSTM)); at the measured difference \|Δ\| = 0.0867: N = 6 (sd 0.02 over N = 6) | python -m core compare --task image |
| F1a | translation | the attacker's view: F1 holds under LiRA and RMIA as well as under the studies' Shokri attack | (—) | not run (the cached runs have no LiRA/RMIA numbers (they need n_shadows ≥ 2)) | — (not run) | quick | — | — | python -m core compare --task image |
| F2 | image | the FFNN forgets early training blocks faster than the RNN | forgets (paper 000, Fig. 6) | FFNN 0.625 [0.605, 0.645], RNN 0.715 [0.695, 0.735]; FFNN − RNN -0.090 [-0.113, -0.067], N = 6 | holds (difference -0.090 (95 % CI [-0.113, -0.067], N = 6; sign-flip p = 0.0312) excludes 0 in the expected direction) | quick | — | the study gives no number; at the measured difference \|Δ\| = 0.0867: N = 6 (sd 0.0137 over N = 6) | python -m core compare --task image — needs for N = 6: 1 analysis job; time unknown |
| F3 | navigation | Dirichlet k ≤ 1 brings the attack to ≈ 50 % at a small utility cost | k = 1: attack 50.59 % (paper 001, Table 1) | RNN attack accuracy 0.508 [0.493, 0.524], utility loss 0.023 [0.012, 0.034], N = 6 | holds (within the rule) | quick | — | N = 1: no spread measured yet (run ≥ 2 repeats) | python -m core compare --task image |
| F3 | translation | Dirichlet k ≤ 1 brings the attack to ≈ 50 % at a small utility cost | (paper 001, Tables 1–2 (RNN victims only)) | not run (nothing cached) | — (not run) | quick | — | — | python -m core compare --task image |
| F4 | image | the same ε costs the RNN more utility | ε (paper 000, Fig. 8) | not run (nothing cached) | — (not run) | quick | — | — | python -m core compare --task image — needs for N = 6: 1 run;  |
| F5 | navigation | L2 regularisation helps the FFNN more | (paper 000, Fig. 7) | no preset | — (not run) | cifar_cpu | — | — |  |

Verdicts: holds / reversed / inconclusive, from the paired FFNN − RNN difference's 95 % t interval and the exact sign-flip test (N ≥ 6); one repeat is inconclusive. F1 and F1a carry compare's verdicts on the same repeats: the declared primary metric (LiRA AUC, else RMIA, else the primary attack's AUC) as it is, every other leakage metric (attack accuracy among them) Holm-adjusted over compare's secondary metrics. Rows marked NOT matched compare models of different utility: read them with that gap.
"""


def test_the_markdown_is_what_the_dict_views_wrote():
    """The typed rows and the rows read back from their JSON print the same Markdown (the layout itself changed
    with the declared rows' columns; MARKDOWN_AT_FEB74E8 keeps the old one for the record)."""
    table = _table()
    again = FindingsTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert findings_markdown(again) == findings_markdown(table)
    assert "decidable at · target N" in findings_markdown(table) and MARKDOWN_AT_FEB74E8.startswith("# The studies")


def test_the_short_table_gives_every_row_kind_its_verdict_word_and_value():
    """The Findings page's first table (readable at 1280 px): the verdict's word and the value the verdict reads,
    each the start of the whole row's cell."""
    from core.views.findings_report import SHORT_COLUMNS, findings_frame, findings_short_frame

    table = _table()
    short, whole = findings_short_frame(table), findings_frame(table)
    assert list(short.columns) == list(SHORT_COLUMNS) and len(short) == len(whole)
    for (_, s), (_, w) in zip(short.iterrows(), whole.iterrows()):
        assert (s["finding"], s["task"]) == (w["finding"], w["task"])
        if not s["verdict"].startswith("— ("):
            assert w["verdict"].startswith(s["verdict"] + " ("), (s["verdict"], w["verdict"])
    values = dict(zip(zip(short["finding"], short["task"]), short["measured here (95 % CI, N)"]))
    verdicts = dict(zip(zip(short["finding"], short["task"]), short["verdict"]))
    assert values[("F1", "image")] == "FFNN − RNN -0.090 [-0.113, -0.067], N = 6"
    assert values[("F1a", "image")].startswith("lira_auc: FFNN − RNN +0.090 [+0.067, +0.113]") and values[("F1a", "image")].endswith("N = 6")
    assert values[("F3", "navigation")].startswith("RNN attack acc. 0.508 [") and "utility loss 0.023 [" in values[("F3", "navigation")]
    assert values[("F1", "navigation")] == "—" and verdicts[("F1", "navigation")] == "— (not run)"
    assert verdicts[("F5", "navigation")] == "— (no preset)" and verdicts[("F3", "navigation")] == "holds"
