"""Analyses: pure functions on validated frames → frozen result dataclasses.

No I/O, no click, no jinja2, no loaders. ``run_suite`` (in ``suite.py``) calls each analysis.
"""
