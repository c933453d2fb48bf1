"""Canonical phase names: the built-in NVTX name patterns per phase and ``--phase-map``.

A (normalised) range name maps to a canonical phase (``model.vocabulary.CANONICAL_PHASES``) by the
first matching pattern of ``--phase-map`` (user), then of ``DEFAULT_PHASE_PATTERNS``
(case-insensitive regex search, tried in that order); no match is ``other``. A heuristic on names.
Used by ``phases`` (the breakdown) and ``steps`` (a detected repeat prefers the data phase), so it
sits below both.
"""
from __future__ import annotations

import functools
import re

from nsys_diag.model.errors import UsageError
from nsys_diag.model.vocabulary import CANONICAL_PHASES

_NB = r"(?:^|[^a-z])"  # "not preceded by a letter"
DEFAULT_PHASE_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # distributed-runtime ranges first: FSDP::pre_forward / FSDP::post_backward are parameter
    # all-gathers and gradient reduce-scatters, not forward/backward compute
    ("communication", (r"^\s*FSDP::", r"c10d::", r"torch\.distributed", r"^\s*nccl",
                       r"^\s*MPI_", r"record_param_comms", r"all_?reduce", r"all_?gather",
                       r"reduce_?scatter", r"all_?to_?all")),
    ("optimizer", (r"optim", r"zero_?grad", r"clip_?grad", r"grad_?clip", r"lr_?sched",
                   _NB + r"(?:adam|adamw|sgd|lamb|scheduler|scaler)(?:[^a-z]|$)",
                   r"update_?(?:params|parameters|weights)", _NB + r"ema(?:[^a-z]|$)")),
    ("backward", (r"backward", _NB + r"bwd", r"autograd", r"grad(?:ient)?s?_?(?:compute|calc)")),
    ("communication", (r"nccl", r"all_?reduce", r"all_?gather", r"reduce_?scatter",
                       r"all_?to_?all", r"broadcast", r"barrier", r"sync_?grad",
                       _NB + r"comm(?:unication)?(?:[^a-z]|$)",
                       _NB + r"i?(?:send|recv)(?:[^a-z]|$)")),
    ("overhead", (r"overhead", _NB + r"log", r"checkpoint(?!_?wrap)", r"ckpt", _NB + r"save", r"eval", r"valid",
                  r"metric", r"print", r"wandb", r"tensorboard", r"summar", r"callback",
                  r"profil", r"(?:load|restore)_?(?:model|state)")),
    ("data", (r"data", r"load", r"fetch", r"input", r"__next__", r"next_?batch", r"get_?batch",
              r"collate", r"sampler", r"reader", r"preprocess", r"augment", r"to_?device",
              _NB + r"h2d", r"prefetch")),
    ("forward", (r"forward", _NB + r"fwd", r"predict", r"infer", r"loss", r"criterion",
                 r"training_step", _NB + r"model(?:[^a-z]|$)")),
)
"""Built-in name patterns per canonical phase, tried top to bottom (order matters:
``FSDP::post_backward`` is communication, ``loss.backward`` backward, ``save_checkpoint``
overhead — activation checkpointing (``checkpoint_wrapped_module``) is not —, ``zero_grad``
optimizer). A canonical phase may appear more than once."""

def parse_phase_map(data: dict) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--phase-map`` TOML (already parsed) → ((canonical, (regex, …)), …).

    Accepted forms: a ``[phases]`` table or top-level keys, each canonical phase mapped to a
    string or a list of strings (regexes, case-insensitive, searched anywhere in the name)::

        [phases]
        data = ["my_loader", "^fetch_"]
        overhead = "push_metrics"
    """
    table = data.get("phases", data) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise UsageError("--phase-map: expected a table of canonical phase = [patterns]")
    out = []
    for key, pats in table.items():
        if key not in CANONICAL_PHASES:
            raise UsageError(f"--phase-map: unknown phase {key!r}; use one of "
                             f"{', '.join(CANONICAL_PHASES)}")
        if isinstance(pats, str):
            pats = [pats]
        if not isinstance(pats, list) or not all(isinstance(p, str) for p in pats):
            raise UsageError(f"--phase-map: {key} must be a string or a list of strings")
        for p in pats:
            try:
                re.compile(p)
            except re.error as exc:
                raise UsageError(f"--phase-map: bad pattern {p!r} for {key}: {exc}") from None
        out.append((key, tuple(pats)))
    return tuple(out)


def canonical_phase(name: str, phase_map=None) -> str:
    """Canonical phase of a (normalised) range name: user patterns first, then the defaults
    (each searched case-insensitively anywhere in the name; the first that matches wins)."""
    user = tuple(phase_map or ())
    try:
        rules = _compiled_rules(user)
    except TypeError:  # a map of unhashable parts: compiled for this call only
        rules = _compiled_rules.__wrapped__(user)
    for canon, pats in rules:
        for p in pats:
            if p.search(name):
                return canon
    return "other"


@functools.lru_cache(maxsize=16)
def _compiled_rules(user: tuple) -> tuple[tuple[str, tuple[re.Pattern, ...]], ...]:
    """The user's patterns then the defaults, compiled once per phase map (perf, bench: the gap
    evidence names every step range — 399 on the bench export, ~70 patterns each — and
    ``re.search`` looked each pattern up in ``re``'s cache: 0.15 s of CPU, now ~0.03 s)."""
    return tuple((canon, tuple(re.compile(p, re.IGNORECASE) for p in pats))
                 for canon, pats in user + DEFAULT_PHASE_PATTERNS)
