"""The engine that runs declared analyses over spans of a trace (streaming, Dask): the
declarations and their registry, chunk cuts, global values, the chunk loop and the assembly."""
