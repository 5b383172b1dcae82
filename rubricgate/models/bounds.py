"""Upper bounds on every count, size and duration rubricgate reads (config, tasks, baseline).

Without them a typo is a resource problem, not an input error: `trials: 100000000` planned a
hundred million jobs and `validate` used 13 GB before saying anything. Each bound is far above
any real suite and far below what would hurt the machine; crossing one is a one-line error
naming the file, the field and the bound.
"""

MAX_TRIALS = 1_000  # per case, in config, task or expect.yaml
MAX_BASELINE_TRIALS = 1_000_000  # a baseline case's trials (it sums runs)
MAX_STEPS = 10_000  # trajectory.max_steps
MAX_TIMEOUT_S = 86_400.0  # agent.timeout_s: one day
MAX_IDLE_TIMEOUT_S = 3_600.0  # agent.idle_timeout_s: an hour without a line is no live agent
MAX_OUTPUT_CAP_BYTES = 1 << 30  # agent.output_cap_bytes
MAX_ERRORED = 1_000_000  # gate.max_errored
MAX_ID_CHARS = 100  # a case id (a task id, or fixture-<folder>): it names transcript files, whose names the OS bounds
MAX_LIST_ITEMS = 10_000  # review lists, tags, rules, tool names
MAX_TASK_FILES = 1_000  # `files:` entries of one task
MAX_FILE_CHARS = 1_000_000  # the text of one `files:` entry
