"""Report formats, one module each.

May import: gating, runner, records, graders, suite, models, errors, exitcodes.
Never the pipeline: a report renders what is recorded.
"""
