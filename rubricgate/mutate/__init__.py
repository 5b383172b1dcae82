"""Rubric mutation testing: plausible edits to the reviewer files, and whether the suite notices."""
