"""Causal replay (issue 25): one causal model of a process's run — host threads, GPU streams and
the edges between them — replayed over representative steps; its fidelity against the capture
and each replayed step's critical path.

``analyze_replay`` (``analysis.py``) is the entry point; the model is built in ``model.py``
(API roles in ``roles.py``, NVTX phases in ``phases.py``), replayed in ``engine.py``, walked in
``critical_path.py`` and changed one what-if at a time in ``whatif.py``. The model, its
assumptions and limits: docs/analyses.md, "Causal replay".
"""
from __future__ import annotations

from nsys_diag.analyses.replay.analysis import (MAX_REPLAY_OPS, MAX_STEPS, NO_REPLAY_ENV,
                                                CriticalPathRow, ReplayResult, StepReplay,
                                                analyze_replay, representative_steps)

__all__ = ["analyze_replay", "ReplayResult", "StepReplay", "CriticalPathRow",
           "representative_steps", "MAX_REPLAY_OPS", "MAX_STEPS", "NO_REPLAY_ENV"]
