"""The Slurm executor: a built variant's attempts as one job array, and what the queue says of
them."""


def output_log(variant: str, job_id: str) -> str:
    """The bundle-relative file Slurm writes one try's output to (`job_id`: "1234_7")."""
    return f"logs/slurm/{variant}/{job_id}.out"
