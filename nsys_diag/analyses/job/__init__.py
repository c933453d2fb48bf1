"""Many traces and jobs: ranks, batch summaries, compare statistics, the job verdict, scaling and MFU."""
