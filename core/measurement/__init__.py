"""Measurement: the math of membership inference, pure numpy/scipy.

Responses, ROC metrics, intervals and verdicts, exposure, reference budget, audit, slices, the studies' reported values. Imports only ``core.foundations``."""
