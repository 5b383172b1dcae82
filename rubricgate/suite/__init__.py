"""The suite stage's inputs: rubricgate.yaml, tasks and fixtures -> cases, the rubric, baseline.json.

Everything a run reads from the repository before it starts is loaded and checked here, with every
problem reported at once and each naming its file, field and fix (validation.py, checks.py).
Paths that cannot escape the repository live in paths.py.

May import: models, errors. Nothing above (runner, gating, reports) is needed to load a suite.
"""
