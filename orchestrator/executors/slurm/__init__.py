"""The Slurm executor: a built variant's attempts as one job array, and what the queue says of
them."""
