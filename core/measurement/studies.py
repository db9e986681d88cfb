"""The studies' own figures and findings, in one place, keyed by task and architecture, each with
its source (paper, table or section): what the app and the CLI show *beside* our measurements.

Nothing here is measured by us. The papers are in ``/work/shared/papers/`` (000: RNNs vs FFNNs,
image / translation / RL; 001: RNN vulnerability, the Dirichlet mechanism). Where a paper does
not name the architecture of a table, the architecture given here is inferred and the note says
from what.

* :data:`DIRICHLET` — 001 Tables 1–2: attack accuracy and utility under Dir_k, per (task, arch);
  only the RNN victims (the LSTM agent, the LSTM encoder-decoder): the study has no FFNN rows.
* :data:`SENSITIVITY` — 000 Table 1: empirical sensitivity S (n = 500 SensitivitySampler pairs).
* :data:`DPSGD_RECIPE` — 000 Table 2: the DP-SGD recipe per task (|D|, batch, epochs, C, δ); the
  paper gives no ε per σ as numbers (Figs. 8–9 only), so any ε "for the study's recipe" is
  computed by us (:func:`core.defenses.sweeps.study_recipe_epsilons`) and labelled as ours.
* :data:`RL_ATTACK_ACCURACY` — 001 §1 (its introduction): the RL attack's accuracy per agent.
* :data:`ARCH_FINDINGS` — per task, the FFNN-vs-RNN finding (000 §4.3 / Fig. 4; navigation also 001 §1 and §5.1).
* :data:`ANALYSIS_FINDINGS` — per analysis of the Analyses page, the finding it checks.
"""
from __future__ import annotations

from dataclasses import dataclass

ARCHS = ("ffnn", "rnn")


@dataclass(frozen=True)
class Source:
    """Where a figure or finding comes from: ``paper`` ("000", "001"), ``where`` in it, and how
    the (task, architecture) it is filed under was read (``note``)."""

    paper: str
    where: str
    note: str = ""

    def cite(self) -> str:
        return f"paper {self.paper}, {self.where}"

    def to_dict(self) -> dict[str, str]:
        return {"paper": self.paper, "where": self.where, "note": self.note, "cite": self.cite()}


# ---------------------------------------------------------------------------- 001 Tables 1–2 (Dirichlet)
@dataclass(frozen=True)
class StudyTable:
    """A study's table of a defense on one (task, arch): its ``source``, the ``model`` and utility ``metric`` it
    reports, and its ``rows``: value (None = no protection) → (attack accuracy %, ± std %, utility, ± std)."""

    source: Source
    model: str
    metric: str
    rows: dict[float | None, tuple[float, float, float, float]]


#: (task, arch) → the study's Dir_k table (values: k). The study reports these for its RNN victims only.
DIRICHLET: dict[tuple[str, str], StudyTable] = {
    ("navigation", "rnn"): StudyTable(
        source=Source("001", "Table 1",
                      "the table does not name the agent; its undefended 99.19 % is the LSTM agent's level "
                      "(001 §1: ≈ 98 % LSTM vs 91 % MLP; A.3: ≈ 99 % on LSTM victims), so filed under RNN"),
        model="PPO agent, MLP + LSTM (MiniGrid MultiRoom)", metric="total reward",
        rows={None: (99.19, 0.35, 0.9095, 0.0429), 100.0: (98.74, 0.58, 0.9047, 0.0425),
              10.0: (55.87, 2.58, 0.8960, 0.0475), 1.0: (50.59, 1.09, 0.8936, 0.0498),
              0.1: (50.00, 0.00, 0.8843, 0.0487), 0.01: (50.00, 0.00, 0.8783, 0.0516)}),
    ("translation", "rnn"): StudyTable(
        source=Source("001", "Table 2", "the seq2seq victim is an LSTM encoder-decoder with attention (001 A.1)"),
        model="LSTM encoder-decoder, Luong attention (Multi30K)", metric="BLEU",
        rows={None: (81.02, 1.64, 46.74, 0.16), 100.0: (67.53, 1.59, 46.53, 0.17),
              10.0: (55.98, 3.10, 46.02, 0.20), 1.0: (53.42, 3.67, 44.57, 0.19),
              0.1: (50.42, 1.19, 43.961, 0.21), 0.01: (50.34, 0.43, 43.74, 0.22)}),
}


def dirichlet_rows(task: str, arch: str) -> StudyTable | None:
    """The study's Dir_k table for (task, arch), or None when the study reports none for it."""
    return DIRICHLET.get((task, arch))


# ---------------------------------------------------------------------------- 000 Tables 1–2 (DP)
SENSITIVITY_SOURCE = Source("000", "Table 1", "empirical sensitivity, n = 500 SensitivitySampler pairs (γ < 0.08)")
#: (task, arch) → the study's empirical sensitivity S (000 Table 1; repeated in its Table 2)
SENSITIVITY: dict[tuple[str, str], float] = {
    ("image", "rnn"): 0.013209, ("image", "ffnn"): 0.013518,
    ("translation", "rnn"): 0.11678, ("translation", "ffnn"): 0.11845,
    ("navigation", "rnn"): 0.093682, ("navigation", "ffnn"): 0.093429,
}
SENSITIVITY_SAMPLES = 500

@dataclass(frozen=True)
class DpsgdRecipe:
    """One row of 000 Table 2: the study's DP-SGD recipe for a task. ``task`` the paper's name of it (IC, RL,
    NMT); ``train_size`` |D| as printed; ``samples`` the number of private samples it stands for (navigation:
    "6400 (32)", 6,400 samples from 32 maps); ``delta`` δ; ``clip_norm`` C; ``batch`` and ``epochs``."""

    task: str
    train_size: str
    samples: int
    delta: float
    clip_norm: float
    batch: int
    epochs: int


#: task → the study's DP-SGD recipe (000 Table 2)
DPSGD_RECIPE: dict[str, DpsgdRecipe] = {
    "image": DpsgdRecipe("IC", "10000", samples=10000, delta=1e-4, clip_norm=10.0, batch=128, epochs=50),
    "navigation": DpsgdRecipe("RL", "6400 (32 maps)", samples=6400, delta=1e-4, clip_norm=10.0, batch=128, epochs=100),
    "translation": DpsgdRecipe("NMT", "5000", samples=5000, delta=1e-4, clip_norm=10.0, batch=128, epochs=50),
}
DPSGD_RECIPE_SOURCE = Source("000", "Table 2", "the recipe only: the paper shows ε per σ as figures (Figs. 8–9), "
                                                "not as numbers")


def sensitivity(task: str, arch: str) -> float | None:
    """The study's empirical sensitivity for (task, arch) (000 Table 1), or None."""
    return SENSITIVITY.get((task, arch))


def sensitivity_sentence(task: str) -> str:
    """000 Table 1's row for ``task`` as a labelled sentence (empty when the study has none)."""
    r, f = sensitivity(task, "rnn"), sensitivity(task, "ffnn")
    if r is None or f is None:
        return ""
    return (f"The study's empirical sensitivity ({SENSITIVITY_SOURCE.cite()}, their models and data, "
            f"n = {SENSITIVITY_SAMPLES}): RNN {r:g}, FFNN {f:g}.")


# ---------------------------------------------------------------------------- findings
#: (task, arch) → the RL attack's accuracy on that agent (001 §1, the introduction, at similar performance levels;
#: §5.1 and its Fig. 2 show the curves without these numbers)
RL_ATTACK_ACCURACY: dict[tuple[str, str], float] = {("navigation", "rnn"): 0.98, ("navigation", "ffnn"): 0.91}

#: task → (what the studies found comparing the two architectures, its source)
ARCH_FINDINGS: dict[str, tuple[str, Source]] = {
    "image": ("On CIFAR-10 (ResNet-101 vs ReNet, ~42.6 M parameters each; paper 000 Fig. 4) the two reached about "
              "the same validation accuracy and the CNN had the *larger* generalization gap, yet the attack was more "
              "accurate against the ReNet at every epoch.", Source("000", "Fig. 4")),
    "translation": ("On Multi30K (Transformer vs LSTM encoder-decoder; paper 000 Fig. 4) the two performed about "
                    "equally in training and validation, and the attack was more accurate against the LSTM.",
                    Source("000", "Fig. 4")),
    "navigation": ("On MiniGrid MultiRoom (MLP vs MLP+LSTM agents; paper 000 Fig. 4, paper 001 §5.1 / Fig. 2) both agents "
                   "had about zero generalization gap, and the attack was more accurate against the LSTM agent "
                   f"(001: ≈ {RL_ATTACK_ACCURACY[('navigation', 'rnn')]:.0%} vs "
                   f"{RL_ATTACK_ACCURACY[('navigation', 'ffnn')]:.0%} at similar returns, 001 §1).",
                   Source("001", "§1 (98 % vs 91 %), §5.1 / Fig. 2")),
}

#: analysis (``core.analyses.registry.names()``) → (the finding its verdict checks, its source)
ANALYSIS_FINDINGS: dict[str, tuple[str, Source]] = {
    "scatter": ("members get lower prediction entropy and cross-entropy than non-members, and the RNN separates "
                "them more (paper 000, Fig. 5).", Source("000", "Fig. 5")),
    "vulnerability": ("the RNN is more vulnerable than the FFNN at every stage of training, and its members' "
                      "entropy drops faster (paper 000, Fig. 4).", Source("000", "Fig. 4")),
    "memorization": ("trained on blocks in sequence, the FFNN forgets the early blocks (attack accuracy on them → "
                     "50 %) while the RNN still leaks them (paper 000 Fig. 6; paper 001 Figs. 1–3).",
                     Source("000", "Fig. 6; 001 Figs. 1–3")),
    "overtraining": ("past the best validation epoch, overtraining raises the attack's accuracy a lot for a "
                     "feed-forward model (CIFAR-10 CNN: ≈ 70 % → ≈ 90 %, paper 001 Fig. 1) and only by a small "
                     "margin for the RNN (LSTM translation model, paper 001 Fig. 3, §5.2).",
                     Source("001", "§5.2, Figs. 1 and 3")),
    "mismatch": ("shadows with other hidden sizes than the victim cost the attack little (paper 001 A.3: ≈ 99 % "
                 "on mismatched LSTM agents).", Source("001", "A.3")),
}


def arch_finding(task: str) -> str:
    """The studies' FFNN-vs-RNN finding for ``task`` (empty when none)."""
    return ARCH_FINDINGS.get(task, ("", None))[0]


def analysis_finding(name: str) -> str:
    """The finding the verdict of analysis ``name`` checks (empty when none)."""
    return ANALYSIS_FINDINGS.get(name, ("", None))[0]
