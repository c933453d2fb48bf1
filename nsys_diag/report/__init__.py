"""Report layer: view-model (JSON-able dict) → HTML (Jinja) / JSON / Markdown / terminal.

Never imports loaders or click.
"""
