"""The translation task's presets and their notes (what each is for; measured times: docs/results.md,
"Preset times")."""
from __future__ import annotations

from typing import Any

from core.tasks.base import PRESET_TIMES

PRESETS: dict[str, dict[str, Any]] = {
    # both architectures generalise at 1,000 pairs, 2 Transformer layers better than one at equal parameters
    # (docs/results.md, "Quick presets, built-in data")
    "quick": dict(dataset="captions", n_train=1000, n_eval=200, epochs=16, batch_size=32, lr=5e-3,
                  n_shadows=2, attack_epochs=(8,), attack_train_epochs=40,
                  n_pairs_source=6000, emb=64, hidden=96, dropout=0.1, tf_layers=2, bleu_sentences=40,
                  rnn=dict(lr=1e-2)),
    # real Multi30K sized for 2 CPU cores: vocabularies capped so that the output softmax stays small; the LSTM
    # learns here only with lr 5e-3 and needs 28 epochs to the Transformer's 18 (docs/results.md, "Why the LSTM
    # did not learn on Multi30K with the quick preset")
    "multi30k_cpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                         batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                         max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                         bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # parallel text in any folder at multi30k_cpu's sizes (docs/your_data.md, "Parallel text")
    "pairs_cpu": dict(dataset="pairs", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                      batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                      max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                      bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # Multi30K that translates, for one GPU: more pairs than the study's 5,000 (less memorisation, so that
    # attacks fall below saturation), one recipe for both architectures (warm-up + inverse-√ schedule, label
    # smoothing 0.1). Unit-scale embeddings: with PyTorch's N(0, 1) the ×√d input scale drowns the
    # Transformer's positions (docs/results.md, "multi30k_gpu")
    "multi30k_gpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=12000, n_eval=1000, epochs=24,
                         batch_size=128, lr=2e-3, n_shadows=5, attack_epochs=(), attack_train_epochs=40,
                         emb=150, hidden=200, dropout=0.2, clip=1.0, tf_layers=2, bleu_sentences=200,
                         warmup_steps=400, label_smoothing=0.1, tf_scaled_embeddings=True),
    # Multi30K that should translate on 2 CPU cores: data size is the lever, multi30k_gpu's recipe at batches
    # of 64 (12 epochs: about as many steps as its 24 of 128)
    "multi30k_small": dict(dataset="multi30k", src_lang="de", tgt_lang="en", n_train=12000, n_eval=1000, epochs=12,
                           batch_size=64, lr=2e-3, n_shadows=2, attack_epochs=(), attack_train_epochs=40,
                           max_vocab=4000, max_len=30, emb=128, hidden=160, dropout=0.2, clip=1.0, tf_layers=2,
                           bleu_sentences=100, warmup_steps=400, label_smoothing=0.1, tf_scaled_embeddings=True),
    # the study's sizes (001 A.1)
    "paper": dict(dataset="multi30k", src_lang="fr", tgt_lang="en", n_train=5000, n_eval=1000, epochs=20,
                  batch_size=64, lr=1e-3, n_shadows=5, attack_epochs=(5, 10, 15), attack_train_epochs=40,
                  emb=150, hidden=200, dropout=0.2, clip=10.0, tf_layers=2, bleu_sentences=100),
}

PRESET_NOTES: dict[str, str] = {
    "quick": "built-in captions corpus, no data folder; 1,000 pairs, 2 shadows, 16 epochs: sized for the built-in "
             f"corpus, too small for real data. Measured times: {PRESET_TIMES}.",
    "multi30k_cpu": "Multi30K in data_dir (train.<src>.gz and train.<tgt>.gz; en→de by default, de→en with "
                    "src_lang/tgt_lang; no fr in the shared data); 1,000 pairs, vocabularies capped at 2,000 tokens, "
                    "2 shadows; the LSTM trains 28 epochs, the Transformer 18. Both memorise (every attack near AUC 1, "
                    "validation BLEU far below 20), so it cannot decide F1 (the RNN leaks more): that needs "
                    "validation BLEU ≥ 20 for both (multi30k_small, multi30k_gpu: their notes). "
                    f"Measured times: {PRESET_TIMES}.",
    "pairs_cpu": "parallel text in data_dir (<name>.<src_lang> / <name>.<tgt_lang>, one sentence a line; the "
                 "'train' pair when there are several; docs/your_data.md) at multi30k_cpu's sizes: on 1,000 pairs "
                 f"both models memorise, every attack near AUC 1. Measured times: {PRESET_TIMES}.",
    "multi30k_small": "Multi30K de→en in data_dir (train.de.gz, train.en.gz); sized for 2 CPU cores: 12,000 "
                      "training pairs, word vocabularies capped at 4,000 per side, 2.43M parameters for both "
                      "architectures, 12 epochs of 64 with multi30k_gpu's recipe (warm-up, label smoothing 0.1), 2 "
                      "shadows. The full preset (victim, shadows, attacks) reaches validation BLEU ≥ 20 for both "
                      "architectures with every attack below saturation, within an hour of one CPU core each; the "
                      "two architectures' BLEU is not matched within ±5 %. Measured times: "
                      f"{PRESET_TIMES}.",
    "multi30k_gpu": "Multi30K en→de in data_dir (train.en.gz, train.de.gz); for a GPU: 12,000 training pairs, "
                    "5 shadows, batches of 128, 24 epochs, the same recipe for both architectures (learning-rate "
                    "warm-up over 400 steps then inverse-√ decay from 2e-3, label smoothing 0.1, the "
                    "Transformer's embeddings initialised at unit input scale) so that the Transformer learns "
                    "too (the paper preset's underfits). Both translate (validation BLEU ≥ 20, the findings' bar); "
                    "LiRA stays below saturation, not every attack does. One seed so far: F1 on it is inconclusive "
                    "until repeats run. Not for a CPU: its 6 × 2,256 training steps would take hours. "
                    f"Measured times: {PRESET_TIMES}.",
    "paper": "Multi30K (fr→en) in data_dir; the study's sizes (5,000 pairs, 5 shadows, 20 epochs): for a GPU. Its "
             "validation BLEU stays below the 20 both architectures need for a comparison that can decide F1; the "
             "multi30k_gpu preset reaches it (its note). No CPU preset with shadows and attacks comes near. "
             f"Measured times: {PRESET_TIMES}.",
}
