"""Per-device busy time, the interval algebra, window bins and timeline strips."""
