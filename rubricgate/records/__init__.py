"""The run's records, written as it happens: events.jsonl, transcripts, summary.json, and the
viewer's index of the run (run_index.py).

A lower layer than reports/: the runner writes here while trials run; reports/ only renders
what is recorded. Every write is scrubbed and atomic (writing.py).

May import: suite (file reading), models, errors, secrets.
"""
