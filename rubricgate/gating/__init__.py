"""Gating: trial results -> rates, exact tests and a decision against the baseline.

aggregate.py counts; stats.py and exact.py are the statistics; gate.py decides (exit code and a
label per dimension); compare.py judges two runs; baseline.py holds the update rules;
summarize.py turns a run into the Summary every report renders.

May import: runner (cost, run state), records, graders, agents (support table), suite, models,
errors, exitcodes.
"""
