"""Each findings row declared once, in code, before any data is read: the paper's claim quoted with its source
(checked against the texts in the papers folder), the row's primary metric, its Holm family, its test, the sign
the claim predicts for FFNN − RNN, how utility must be matched, the paper's epochs and sizes beside the preset's,
the row's known deviations from the paper and the halves of the claim not built here.

:func:`spec` gives a (finding, task)'s :class:`RowSpec`; :func:`declared_family` the Holm family F1's metric will
be judged in for a config (fixed by which attacks the config runs and its evaluation set's size, never by values),
so :func:`core.measurement.stats.decidable_at` is known before a single run exists. Nothing here reads the cache.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.analyses.arch_answer import ANSWER_METRIC, MATCHED_RELATIVE_GAP, TEST
from core.analyses.repeats import HEADLINE, EvaluationFacts, metric_roles
from core.foundations.config import ExperimentConfig
from core.measurement.stats import decidable_at
from core.measurement.studies import DIRICHLET, RL_ATTACK_ACCURACY

#: F3's equivalence margin around 50 % (the paper gives none: ours, stated) and its utility-loss bound (001 §5.3:
#: "less than 10 %" on translation, "less than 5 %" on navigation)
F3_MARGIN = 0.05
F3_MAX_LOSS = {"translation": 0.10, "navigation": 0.05}
#: both arms' value within this of 50 %: the attack is at chance on both (a floor)
CHANCE_BAND = 0.02
#: utility loss at or above this on both arms: the defended models learned nothing (a floor)
LOSS_FLOOR = 0.95

MATCHING = (f"train and validation utility of FFNN and RNN within ±{MATCHED_RELATIVE_GAP:.0%} of the larger (the "
            "gap's 95 % interval over the repeats; paper 000 §4.1: 'similar training and validation performance "
            "levels')")
PAIRED_TEST = ("paired over repeats (same seed, same split): the 95 % t interval of FFNN − RNN and the exact two-sided "
               "sign-flip test must agree (α = 0.05)")


@dataclass(frozen=True)
class RowSpec:
    """One row's declaration: see the module's docstring. ``family`` names the metrics the row's metric is
    Holm-adjusted with (``("compare's secondary family",)`` for F1: :func:`declared_family`); ``paper_effect``
    (FFNN − RNN in the metric's units, its source) where the paper prints one, else None."""

    finding: str
    task: str
    quote: str
    cite: str
    metric: str
    family: tuple[str, ...]
    test: str
    expected_sign: int
    matching: str
    epochs: str
    sizes: str
    deviations: tuple[str, ...]
    not_built: tuple[str, ...]
    paper_effect: tuple[float, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"quote": self.quote, "cite": self.cite, "metric": self.metric, "family": list(self.family),
                "test": self.test, "expected_sign": self.expected_sign, "matching": self.matching,
                "epochs": self.epochs, "sizes": self.sizes, "deviations": list(self.deviations),
                "not_built": list(self.not_built),
                "paper_effect": None if self.paper_effect is None else {"value": self.paper_effect[0],
                                                                        "source": self.paper_effect[1]}}

    @classmethod
    def from_dict(cls, finding: str, task: str, d: dict[str, Any]) -> "RowSpec":
        pe = d.get("paper_effect")
        return cls(finding, task, d["quote"], d["cite"], d["metric"], tuple(d["family"]), d["test"],
                   int(d["expected_sign"]), d["matching"], d["epochs"], d["sizes"], tuple(d["deviations"]),
                   tuple(d["not_built"]), None if pe is None else (float(pe["value"]), str(pe["source"])))


def declared_family(cfg: ExperimentConfig) -> tuple[str, ...]:
    """The secondary family (:func:`core.analyses.repeats.metric_roles`) a comparison of ``cfg``'s preset will judge
    attack accuracy in, from the config alone: LiRA and RMIA run with ≥ 2 shadows, the evaluation set holds n_eval
    members and n_eval non-members."""
    names = [m for m in HEADLINE if cfg.n_shadows >= 2 or m not in ("lira_auc", "rmia_auc")]
    facts = EvaluationFacts(int(cfg.n_eval), int(cfg.n_eval), True, None)
    roles = metric_roles({m: None for m in names}, facts)  # roles read the names, never a value
    return tuple(m for m, r in roles.items() if r.role == "secondary")


_F1_QUOTE = {
    "image": ("000 §4.3: 'the attack accuracy against the RNN models is consistently higher than it is against FFNN "
              "models' — image: 'the validation performance of the RNN and FFNN models are approximately equal'",
              "paper 000 §4.3, Fig. 4 (left column)"),
    "translation": ("000 §4.3: 'the two models have approximately equal performance levels both in training and "
                    "validation but the MIA against the RNN achieves a higher attack accuracy'",
                    "paper 000 §4.3, Fig. 4 (centre column)"),
    "navigation": ("001 §1: 'the attack is roughly 98% successful for the RNN agent, whereas the success rate for the "
                   "feed-forward agent is 91%'; 001 §5.1: 'across all training times, the attack accuracy on the RNN "
                   "agent is higher'", "paper 001 §1 (the numbers), §5.1 and Fig. 2 (the curves); paper 000 Fig. 4 "
                                       "(right column)"),
}
_EPOCHS = {
    "image": "paper: attacked at every epoch up to 50 (000 Fig. 4; DP recipe 000 Table 2: 50); here: the preset's "
             "epochs, the verdict on the final epoch, the checkpoint epochs shown beside it",
    "translation": "paper: every epoch (000 Fig. 4); here: the preset's epochs, final epoch judged",
    "navigation": "paper: a range of stopping times (001 Fig. 2); here: the preset's PPO epochs, final epoch judged",
}
_SIZES = {
    "image": "paper: CIFAR-10, 25,000 victim records, ResNet-101 vs ReNet (~42.6 M parameters each, 000 §4.2); here: "
             "the preset's data and sizes (quick: 8×8 digits, 200 + 200 records)",
    "translation": "paper: Multi30K, 15,000 victim pairs, Transformer vs LSTM (000 §4.2); here: the preset's",
    "navigation": "paper: MiniGrid MultiRoom, 16 training maps, MLP vs MLP+LSTM PPO agents (001 §5.1); here: the "
                  "preset's",
}
_F1_DEVIATIONS = (
    "the verdict reads the final epoch; the paper's claim is every epoch (the checkpoint epochs are shown beside it, "
    "averaged with equal weight per epoch, without a verdict of their own: a second test would enlarge the family)",
    "attack accuracy is judged inside compare's Holm family of secondary metrics (the comparison's primary metric is "
    "LiRA AUC): the family's size sets the N at which the row can decide",
)


def spec(finding: str, task: str) -> RowSpec:
    """The declared :class:`RowSpec` of ``finding`` on ``task``."""
    epochs, sizes = _EPOCHS.get(task, "the preset's"), _SIZES.get(task, "the preset's")
    if finding == "F1":
        quote, cite = _F1_QUOTE.get(task, ("", ""))
        effect = None
        if task == "navigation":
            d = RL_ATTACK_ACCURACY[("navigation", "ffnn")] - RL_ATTACK_ACCURACY[("navigation", "rnn")]
            effect = (d, "001 §1: 91 % (MLP) − 98 % (LSTM)")
        return RowSpec("F1", task, quote, cite, ANSWER_METRIC, ("compare's secondary family",), TEST, -1, MATCHING,
                       epochs, sizes, _F1_DEVIATIONS, (), effect)
    if finding == "F1a":
        return RowSpec("F1a", task, "not in the studies: F1 under LiRA and RMIA (our question, the attacker's view)",
                       "— (not in the studies)", "lira_auc", ("lira_auc (primary)",),
                       PAIRED_TEST + "; LiRA AUC is compare's primary metric (its own family), RMIA AUC a secondary "
                                     "one beside it", -1, MATCHING, epochs, sizes,
                       ("no paper claim to deviate from; shares F1's runs and its matching condition",), ())
    if finding == "F2":
        cite = "paper 000 §4.3, Fig. 6" if task == "image" else "paper 001 §5.1, Fig. 2 (bottom right); 000 Fig. 6"
        return RowSpec("F2", task, "000 §4.3: 'the MIAs' accuracy for older batches of data in FFNNs quickly "
                       "diminishes to 50%, whereas in RNNs, the MIAs maintain non-trivial accuracy even for the early "
                       "batches'", cite, "attack accuracy on the first block learned", ("alone",),
                       PAIRED_TEST, -1, "not checked (the memorization analysis stores no utility gap)",
                       "paper: sequential batches, each trained for several epochs; here: 4 blocks of the preset's "
                       "epochs", sizes,
                       ("one block (the first) is judged; the paper reads the whole curve over blocks",
                        "on quick presets both first-block accuracies can sit at chance: the row then reads "
                        "uninformative"),
                       () if task == "image" else
                       ("F2 on navigation (001 Fig. 2, sequential training over map seeds): not built — the "
                        "memorization analysis has no navigation layout",))
    if finding == "F3":
        loss = F3_MAX_LOSS.get(task, 0.10)
        table = DIRICHLET.get((task, "rnn"))
        return RowSpec("F3", task, "001 §5.3: 'the Dirichlet mechanism is able to reduce the attack accuracy in both "
                       "tasks to 50%' with utility degraded 'by less than 5%' (RL) / 'less than 10%' (translation)",
                       table.source.cite() if table else "paper 001 §5.3", "RNN attack accuracy under Dir_k, k = 1",
                       ("alone (an intersection-union test: both parts must pass)",),
                       f"equivalence by TOST: the mean attack accuracy within 50 % ± {F3_MARGIN:.0%} (two one-sided t "
                       f"tests, α = 0.05 each), and the utility loss's one-sided 95 % upper bound ≤ {loss:.0%}", 0,
                       "not applicable (one architecture, its own undefended run as the baseline)",
                       "the preset's epochs (the defense acts after training)",
                       sizes + "; 8 Dirichlet draws per repeat",
                       (f"the margin ±{F3_MARGIN:.0%} is ours (the paper gives none)",
                        "the verdict reads the naive attacker (the paper's); the adaptive attacker, LiRA and RMIA on "
                        "the same defended point and the undefended baseline are shown beside it"),
                       ("an attacker who averages repeated queries of one record (a fresh Dirichlet draw per query): "
                        "not built",))
    if finding == "F4":
        return RowSpec("F4", task, "000 §5.2.2: 'the RNN models consistently trade off more utility than the FFNN "
                       "models at every noise variance tested. The same level of noise translates to the same level "
                       "of (ε, δ)-differential privacy in DP-SGD'", "paper 000 §5.2.2, Fig. 8 (top row)",
                       "utility loss under DP-SGD, averaged over a σ grid at the paper's clip norm", ("alone",),
                       PAIRED_TEST + "; per repeat the utility loss averaged over σ = 0.5, 1, 2 (equal weight per σ)",
                       -1, MATCHING.replace("utility of FFNN and RNN", "utility of the undefended FFNN and RNN") +
                       "; and the same ε for the same σ (the accountants' ε within 1 %)",
                       "paper: 50 epochs (100 for RL), 000 Table 2; here: the preset's",
                       sizes + "; clip norm 10, δ from the preset (paper: clip 10, batch 128, δ = 1e-4, 000 Table 2)",
                       ("three σ, averaged: the paper reads each σ of its figure",
                        "translation: the paper fine-tunes BERT on WMT14 en–fr for DP (000 §5.2.2); here the "
                        "preset's own models and data"),
                       ("the Gaussian privacy module half (000 Fig. 8, bottom row): not built — the same σ is the same "
                        "random-DP ε only at the same sensitivity (000 §5.2.2 (ii), Table 1), which needs "
                        "SensitivitySampler runs per architecture and repeat; the Defenses page measures GPM points "
                        "one architecture at a time",))
    if finding == "F5":
        rl = task == "navigation"
        return RowSpec("F5", task, "000 §5.1: 'the MIA accuracy in the FFNN models is highly sensitive to the "
                       "regularization coefficient λ, whereas the MIA accuracy against RNN models are impacted by "
                       "regularization only marginally'" + ("; RL: PPO's clipping ε, 'relatively less sensitive to "
                                                            "regularization based on the corresponding line slopes'"
                                                            if rl else ""),
                       "paper 000 §5.1, Fig. 7", "sensitivity of the attack accuracy to the regulariser (slope)",
                       ("alone",), PAIRED_TEST + "; per repeat the least-squares slope of the attack accuracy over "
                       "three values of the regulariser " + ("(PPO clip ε 0.05, 0.1, 0.3; a smaller ε is stronger)"
                                                             if rl else "(λ = 1e-4, 1e-3, 1e-2, on log10 λ)"),
                       +1, MATCHING.replace("utility of FFNN and RNN", "utility of the undefended FFNN and RNN"),
                       "the preset's epochs", sizes,
                       ("three values, a line through them: the paper's grid is its figure's, not printed",),
                       ())
    raise KeyError(f"no declared row for {finding} on {task}")


def row_decidable_at(s: RowSpec, family_size: int) -> int:
    """The N at which the row's declared test can decide at all: the sign-flip floor times the Holm factor
    (:func:`core.measurement.stats.decidable_at`); a TOST (F3) decides from N = 2 (it is a t test)."""
    if s.finding == "F3":
        return 2
    return decidable_at(max(1, family_size))


