"""The one clock for output timestamps.

``SOURCE_DATE_EPOCH`` (the reproducible-builds convention: integer seconds since the Unix epoch)
wins when set, so reports built in CI can be compared byte for byte.
"""
from __future__ import annotations

import datetime as _dt
import os


def now_utc() -> str:
    """The current time (or ``SOURCE_DATE_EPOCH``) as ISO-8601 UTC, ``2026-12-01T08:31:02Z``."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    t = (_dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch.isdigit()
         else _dt.datetime.now(_dt.timezone.utc))
    return t.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
