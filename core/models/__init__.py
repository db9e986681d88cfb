"""Models: pure ``nn.Module`` definitions (FFNN and RNN per task, the attack networks, joint ensembles).

Training loops live elsewhere. Imports nothing from the rest of ``core``.
"""
