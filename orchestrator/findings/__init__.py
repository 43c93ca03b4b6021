"""Findings: signatures (what makes two reports the same defect), the subject-frame filter,
folding of repeats, suppressions."""
