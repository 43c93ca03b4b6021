"""csorch: a Compute Sanitizer validation orchestrator for PyTorch CUDA extensions."""

__version__ = "0.1.0"
