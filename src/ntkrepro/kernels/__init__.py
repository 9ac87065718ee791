"""Shared kernel machinery: resumable block computation and closed-form NNGP/NTK inference."""
