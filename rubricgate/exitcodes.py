"""Named exit codes (README.md, "Exit codes"): never 0 when something could not be judged."""

OK = 0  # every rate at or above baseline
REGRESSION = 1  # a rate fell below baseline
CANNOT_JUDGE = 2  # bad config, no tasks, unreadable baseline, internal error
