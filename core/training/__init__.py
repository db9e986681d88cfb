"""Training: the training loop, DP-SGD (Opacus), PPO, the ensemble of models trained side by side.

Imports ``core.foundations``, ``core.models``."""
