"""Per-arithmetic shape and token functions of the VLM processors graphlint knows.

Each function takes the source image (height, width) and the resolved parameters (config values over
the class defaults of rules/data/processors.toml) and returns the processed image layout; the token
count is separate because the processor class, not the image processor, makes it. Each follows the
transformers file its table entry cites, line for line where rounding matters (int() of a float,
round(x, 7), floor divisions): a processor that rounds one way and a graph exported at sizes rounded
the other way is exactly the mismatch graphlint exists to find.
"""

from __future__ import annotations

from graphlint.pipeline.processor_classes.arith import ARITH, TOKENS, Layout

__all__ = ["ARITH", "TOKENS", "Layout"]
