"""Executors: where attempts run. The attempt itself (execute), its logs read back, and the
Slurm executor."""
