"""tamper."""
