"""The studies' figures (core/measurement/studies.py) are labelled as the paper's, on the architecture they
belong to, and ours as ours; task texts carry no measured figures of ours."""
import math
import os
import re
from pathlib import Path

import pytest

from core.analyses.registry import names as analysis_names
from core.defenses import gpm
from core.defenses.registry import get as get_mechanism
from core.defenses.sweeps import study_recipe_epsilons
from core.experiment.results import DefendedPoint, DefenseBaseline
from core.measurement import studies
from core.tasks import available_tasks, get_task
from core.views.defense_figures import MEASURABLE_COLUMNS, NOT_MEASURED, defense_table, defense_table_display
from core.views.training_defense_figures import dpsgd_recipe_table

#: a figure in prose: a decimal, a percentage, "N of M", a BLEU/AUC/accuracy value, seconds
FIGURE = re.compile(r"\d+\.\d+|\d+\s?%|\b\d+ of \d+\b|\b(?:BLEU|AUC|accuracy|return)\s+\d|\d+\s?s\b")


def measured_figures(text: str) -> list[str]:
    """Sentences of ``text`` with a figure that is not labelled as a study's (``paper NNN``)."""
    sentences = re.split(r"(?<=[.;:])\s+", text)
    return [s for s in sentences if FIGURE.search(s) and not re.search(r"\bpaper \d{3}\b", s)]


def test_the_figure_check_catches_the_old_frozen_texts():
    old_image = ("measured here, the CNN reaches validation accuracy 0.95 and the ReNet 0.875, and every attack "
                 "finds the CNN at least as vulnerable (LiRA AUC 0.78 vs 0.64).")
    old_translation = "preset (measured on 2 CPU cores: validation BLEU 34 Transformer, 61 LSTM)."
    old_navigation = "both agents then reach the goal on 15 of 16 member maps after 819,200 frames."
    old_timing = "at about 160 s per model on 2 CPU cores."
    for text in (old_image, old_translation, old_navigation, old_timing):
        assert measured_figures(text), text
    assert not measured_figures("The study (paper 000, CIFAR-10) found 70 % vs 90 %.")


@pytest.mark.parametrize("name", available_tasks())
def test_task_texts_carry_no_measured_figures(name):
    task = get_task(name)
    assert task.about, name
    assert measured_figures(task.about) == [], task.about


def test_dirichlet_figures_are_the_papers_on_their_rnn_victims_only():
    assert set(studies.DIRICHLET) == {("navigation", "rnn"), ("translation", "rnn")}
    for (task, arch), table in studies.DIRICHLET.items():
        assert table.source.paper == "001" and table.source.where in ("Table 1", "Table 2")
        assert table.source.note and table.model
        assert set(table.rows) == {None, 100.0, 10.0, 1.0, 0.1, 0.01}
    assert studies.dirichlet_rows("navigation", "ffnn") is None and studies.dirichlet_rows("image", "rnn") is None


def _attack(acc=0.5, auc=0.5, name=None):
    return {**({"name": name} if name else {}), "accuracy": acc, "advantage": 2 * acc - 1, "auc": auc, "tpr_at_fpr": {}}


def _point(k, acc):
    return DefendedPoint.from_dict({"value": k, "attack": _attack(acc, name="shadow"), "attacks": {}, "utility": 0.5,
                                    "utility_loss": 0.1})


BASE = DefenseBaseline.from_dict({"attack": _attack(0.7, name="shadow"), "attacks": {}, "utility": 0.9})


def test_dirichlet_table_labels_the_papers_rows_and_ours():
    base = BASE
    rows = {"ffnn": [_point(10.0, 0.6)], "rnn": [_point(10.0, 0.65)]}
    df = defense_table("translation", get_mechanism("dirichlet"), rows, {"ffnn": base, "rnn": base})
    study = df[df["source"].str.startswith("study")]
    ours = df[df["source"].str.startswith("ours")]
    assert set(study["arch"]) == {"RNN"}  # no study figure on an FFNN row
    assert all("paper 001, Table 2" in s for s in study["source"])
    paper_undefended = studies.DIRICHLET[("translation", "rnn")].rows[None][0]  # a percentage in the paper
    assert study.loc[study["k"] == "no protection", "attack acc (naive)"].item() == pytest.approx(paper_undefended / 100)
    assert set(ours["arch"]) == {"FFNN", "RNN"} and len(ours) == 12
    assert ours.loc[(ours["arch"] == "FFNN") & (ours["k"] == "10"), "attack acc (naive)"].item() == 0.6
    # image: the studies report nothing, so only our rows
    assert set(defense_table("image", get_mechanism("dirichlet"), rows, {"ffnn": base, "rnn": base})["source"]) == {"ours (this preset)"}


def test_dpsgd_recipe_rows_say_their_epsilon_is_ours():
    eps = study_recipe_epsilons("image", [1.0])
    assert eps[0].computed_by.startswith("us") and "paper 000, Table 2" in eps[0].computed_by
    df = dpsgd_recipe_table(studies.DPSGD_RECIPE["image"], eps, {})
    assert "ε computed by us" in df["source"].item() and "paper 000, Table 2" in df["source"].item()
    recipe = studies.DPSGD_RECIPE["image"]
    assert eps[0].sample_rate == pytest.approx(recipe.batch / recipe.samples)  # q = B / |D|


def test_sensitivities_are_read_per_task_and_architecture():
    for (task, arch), value in studies.SENSITIVITY.items():
        assert studies.sensitivity(task, arch) == value
        s = studies.sensitivity_sentence(task)  # each architecture's own value beside its name
        assert f"{'RNN' if arch == 'rnn' else 'FFNN'} {value:g}" in s
        assert studies.SENSITIVITY_SOURCE.cite() in s and f"n = {studies.SENSITIVITY_SAMPLES}" in s
    assert studies.sensitivity("image", "transformer") is None and studies.sensitivity_sentence("nope") == ""
    # the source's "γ < 0.08" is what n = 500 SensitivitySampler pairs give (Rubinstein & Aldà's γ(n))
    stated = float(re.search(r"γ < ([\d.]+)", studies.SENSITIVITY_SOURCE.note).group(1))
    assert gpm.random_dp_gamma(studies.SENSITIVITY_SAMPLES) < stated


# ---------------------------------------------------------------------------- the figures against the papers
def papers_folder() -> Path | None:
    """The papers' text (``MIA_PAPERS_DIR``, else the shared folder beside the checkout), or None."""
    root = Path(__file__).resolve().parent.parent
    for folder in (os.environ.get("MIA_PAPERS_DIR"), root.parent / "shared" / "papers",
                   root.parent.parent / "shared" / "papers"):
        if folder and Path(folder).is_dir() and list(Path(folder).glob("000_*.txt")):
            return Path(folder)
    return None


def paper_text(paper: str) -> str:
    folder = papers_folder()
    if folder is None:
        pytest.skip("the papers' text is not here (set MIA_PAPERS_DIR): the figures cannot be checked against them")
    [path] = folder.glob(f"{paper}_*.txt")
    return path.read_text()


NUMBER = r"(\d+(?:\.\d+)?)"


def test_dirichlet_rows_are_the_papers_tables():
    """Each row of studies.DIRICHLET against the same row of the paper's table (001 Tables 1–2)."""
    for (task, arch), table in studies.DIRICHLET.items():
        text = paper_text(table.source.paper)
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(f"{table.source.where}: Deploying"))
        for k, row in table.rows.items():
            label = "No Protection" if k is None else f"$k = {k:g}$"
            line = next(line for line in lines[start:] if line.startswith(label + "\t"))
            printed = tuple(float(v) for v in re.findall(NUMBER, line[len(label):]))
            assert printed == row, (task, arch, k, line)


def test_sensitivities_are_the_papers_table_1():
    text = paper_text(studies.SENSITIVITY_SOURCE.paper)
    for task, printed_as in (("image", "Image Classification"), ("translation", "Machine Translation"),
                             ("navigation", "Reinforcement Learning")):
        line = next(line for line in text.splitlines() if line.startswith(printed_as + " 0."))  # columns: RNN, FFNN
        rnn, ffnn = (float(v) for v in re.findall(NUMBER, line)[:2])
        assert (studies.sensitivity(task, "rnn"), studies.sensitivity(task, "ffnn")) == (rnn, ffnn), line


def test_rl_attack_accuracies_are_the_papers():
    source = studies.ARCH_FINDINGS["navigation"][1]
    text = paper_text(source.paper)
    m = re.search(r"roughly (\d+)% successful for the RNN agent, whereas the success rate for the feed-forward "
                  r"agent is (\d+)%", text)
    assert m, "the sentence of 001 §1 the accuracies are read from"
    # the sentence is in the introduction (§1), before §2, not in §5.1: the source cites it there
    assert m.start() < text.index("2 RELATED WORKS") and source.where.startswith("§1 (98 % vs 91 %)")
    rnn, ffnn = (int(v) / 100 for v in m.groups())
    assert math.isclose(studies.RL_ATTACK_ACCURACY["navigation", "rnn"], rnn)
    assert math.isclose(studies.RL_ATTACK_ACCURACY["navigation", "ffnn"], ffnn)


def test_every_finding_has_a_source():
    for name, (text, source) in {**studies.ARCH_FINDINGS, **studies.ANALYSIS_FINDINGS}.items():
        assert text and source.paper in ("000", "001"), name
    # every analysis of the studies has its finding; the per-record views go beyond them
    beyond_the_studies = {"exposure", "budget", "audit", "slices"}
    assert set(studies.ANALYSIS_FINDINGS) == set(analysis_names()) - beyond_the_studies
    assert beyond_the_studies <= set(analysis_names())


def test_defense_table_says_not_measured_where_only_the_attack_is_known():
    """Before "Measure", a row holds the curve's fast point (attack, guarantee; utility None): its
    utility reads "not measured", its attack the number; a study row's blanks stay "—"."""
    base = BASE
    fast = DefendedPoint.from_dict({"value": 10.0, "attack": _attack(0.61, name="shadow"),
                                    "attacks": {"lira": _attack(auc=0.66)}, "utility": None,
                                    "utility_loss": None, "epsilon": 1.5, "guarantee": ""})
    rows = {"ffnn": [fast], "rnn": [_point(10.0, 0.65)]}
    df = defense_table("translation", get_mechanism("dirichlet"), rows, {"ffnn": base, "rnn": base})
    shown = defense_table_display(df)
    ffnn10 = df.index[(df["arch"] == "FFNN") & (df["k"] == "10") & df["source"].str.startswith("ours")].item()
    assert df.loc[ffnn10, "attack acc (naive)"] == 0.61 and df.loc[ffnn10, "ε (theory)"] == 1.5
    assert df.loc[ffnn10, "LiRA/RMIA AUC (best)"] == 0.66
    # our rows' blank utility cells: FFNN k = 10 (fast point) and the 4 grid values with no point at all, × 2 archs
    ours = df["source"].str.startswith("ours") & (df["k"] != "no protection")  # undefended: no adaptive attacker
    n_blank_ours = int(df.loc[ours, list(MEASURABLE_COLUMNS)].isna().sum().sum())
    assert n_blank_ours > 0 and int((shown == NOT_MEASURED).sum().sum()) == n_blank_ours
    assert shown.loc[ffnn10, "utility"] == NOT_MEASURED and shown.loc[ffnn10, "attack acc (naive)"] == "0.610"
    # the study's blanks are what the paper does not report: "—", never "not measured" nor "None"
    n_blank_study = int(df.loc[~ours, list(MEASURABLE_COLUMNS)].isna().sum().sum())
    assert n_blank_study > 0 and (shown.loc[~ours, list(MEASURABLE_COLUMNS)] == "—").sum().sum() == n_blank_study
    assert not shown.isin(["None", "nan"]).any().any()
