"""`rubricgate view`: the run folders as pages, served on loopback or built as a static site.

A layer above pipeline beside adopt, fleet and flows: it reads what runs wrote (records) and
renders with Jinja2 (imported here only: never on `--help`, `validate` or a run's start).
"""
