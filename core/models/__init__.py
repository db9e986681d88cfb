"""Models: pure ``nn.Module`` definitions (FFNN and RNN per task, the attack networks, joint ensembles), a model as
its owner has it (``kinds/``), and a user's weights file checked against a model (``state_dict``).

Training loops live elsewhere. Imports only ``core.foundations`` (its errors, file reading).
"""
