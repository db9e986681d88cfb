"""Experiment: one frozen config to a summary — cache, roles (victim and shadows), executors, pipeline, reference attacks (LiRA, RMIA), shadow fidelity, typed results.

Imports the floors below it: foundations, measurement, data, models, training, attacks, tasks."""
