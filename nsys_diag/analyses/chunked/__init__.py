"""Chunked (streaming) analysis: one process's timeline cut into chunks, each analysed on its
own rows, the chunk partials merged into the results an in-memory run gives.

``cuts``: where chunks may be cut and which rows each chunk sees (the in-memory mirror of the
SQL read window). Each analysis that streams has a ``partial_*`` / ``merge_*`` pair beside it in
this package; ``app/stream.py`` reads the chunks and drives them.
"""
