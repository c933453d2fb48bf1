"""The application layer: one module per command (``analyze``, ``inspect``, ``batch``,
``compare``, ``profile``) and what they share (``options``, ``memory_policy``, ``outputs``,
``background``; batch's ``discovery``, ``cache``, ``trace_job``, ``scheduling``, ``batch_index``).

No click here: ``nsys_diag/cli.py`` parses the command line and calls these modules; they return
exit codes or lines and raise the typed errors of ``nsys_diag.model.errors``.
"""
