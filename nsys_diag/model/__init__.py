"""Model layer: column contracts, the TraceBundle, typed errors and thresholds.

Imports nothing from the other layers.
"""
