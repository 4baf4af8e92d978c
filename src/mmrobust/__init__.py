"""mmrobust: measure how robust multimodal LLMs are.

Two benchmark families share one pipeline (see ``DESIGN.md``):

* video tampering (MVTamperBench, arXiv:2412.19794), and
* leading questions (MMR, arXiv:2406.10638).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
