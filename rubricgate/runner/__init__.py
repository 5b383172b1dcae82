"""The execution engine: workspaces, scheduling, the trial cache, the cost budget, the run's state.

One trial = a throwaway workspace + one agent run (through agents/ and isolation/) + its grades,
written to records/ as it ends.

May import: records, graders, agents, isolation, suite, models, errors, secrets.
"""
