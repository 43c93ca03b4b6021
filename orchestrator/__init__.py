"""csorch: a Compute Sanitizer validation orchestrator.

Builds patched and unpatched variants of a CUDA/C++ PyTorch extension side by side,
runs their regression cases under a checker, and states whether a fix causally
removes the defect. See DESIGN.md for the flow; each stage is one module here.
"""

__version__ = "0.1.0"
