"""Static checks run before building a candidate (fixture version)."""
import re


def validate_kernel_static(src, backend="cuda", precision="fp32"):
    errors, warnings = [], []
    if "__global__" not in src:
        errors.append("static check failed: no __global__ kernel in the candidate")
    if re.search(r"^\s*except\b", src, re.M):
        errors.append("static check failed: try/except fallback is not allowed")
    if "load_inline" not in src:
        warnings.append("candidate does not call load_inline")
    return (not errors), errors, warnings
