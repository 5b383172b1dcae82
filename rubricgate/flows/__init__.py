"""Flows that run the pipeline more than once or around a stored file: `baseline update`
(baseline_update.py) and `compare --base REF` with interleaved base and head trials
(compare_run.py).

May import: pipeline and every stage below it.
"""
