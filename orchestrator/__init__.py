"""csorch: a Compute Sanitizer validation orchestrator.

Builds patched and unpatched variants of a CUDA/C++ PyTorch extension side by side,
runs their regression cases under a checker, and states whether a fix causally
removes the defect. docs/architecture.md draws the flow and gives each package's job.
"""

__version__ = "0.1.0"
