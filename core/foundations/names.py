"""Display names, one source for the pages, the figures, the report and the CLI's text.

Keys are the library's identifiers (architectures, attacks, utility metrics); a name missing here
is shown as its identifier. Task names are the tasks' own (:attr:`core.tasks.base.Task.label`).
"""
from __future__ import annotations

#: architecture -> how it is written
ARCH_NAMES = {"ffnn": "FFNN", "rnn": "RNN"}

#: attack -> its full name (with the paper it comes from)
ATTACK_NAMES = {
    "shadow": "Shadow-model classifier",
    "loss_threshold": "Loss threshold (Yeom)",
    "entropy_threshold": "Entropy threshold",
    "prmia": "PRMIA (rank histogram)",
    "bleu_feature": "BLEU features (Hisamoto)",
    "lira": "LiRA (offline, Carlini)",
    "lira_online": "LiRA (online, Carlini)",
    "rmia": "RMIA (Zarifzadeh)",
    "quantile": "Quantile regression (Bertran, no shadows)",
    "label_only": "Label-only, augmentations (Choquette-Choo)",
    "gap": "Gap attack (label only: correct ⇒ member)",
}

#: attack -> a shorter name for legends (half-width charts)
ATTACK_SHORT = {"shadow": "shadow model", "loss_threshold": "loss threshold", "entropy_threshold": "entropy threshold",
                "prmia": "PRMIA", "bleu_feature": "BLEU features", "pvmia": "PVMIA", "lira": "LiRA",
                "lira_online": "LiRA online", "rmia": "RMIA",
                "quantile": "quantile regression", "label_only": "label-only", "gap": "gap"}

#: utility metric -> how it is written
UTILITY_NAMES = {"accuracy": "accuracy", "bleu": "BLEU", "return": "mean return"}
