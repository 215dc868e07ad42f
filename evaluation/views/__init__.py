"""Evaluation pages: ``runs`` (leaderboard, curves, endpoints, model runs, results imports,
selection, support studies) and ``failures`` (trajectories, failure labels, taxonomy)."""
