"""Adoption in a team's repository: `init` (init.py, the workflows it writes), `record` (a real
review turned into a task) and `changed` (did a gated file change since a ref?).

May import: pipeline and every stage below it.
"""
