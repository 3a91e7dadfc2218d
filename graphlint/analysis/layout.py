"""Layout helpers: parse OpenVINO layout strings, guess a layout from a shape, build PrePostProcessor code."""

from __future__ import annotations

from graphlint.analysis.inputs import channel_axis


def parse_layout(text: str | None) -> list[str] | None:
    """``"[N,C,H,W]"`` or ``"NCHW"`` -> ["N", "C", "H", "W"]; ``"[N,...,C]"`` keeps ``...``; None if empty."""
    if not text:
        return None
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        parts = [p.strip() for p in t[1:-1].split(",") if p.strip()]
        return parts or None
    if "..." in t:
        return None
    return list(t) if t.isalpha() else None


def guess_layout(shape: tuple | None) -> str | None:
    """NCHW / NHWC from the channel axis of a rank-4 shape; NC / NCD.. / sequence layouts are left to people."""
    is_image, axis = channel_axis(shape)
    if not is_image or axis is None:
        return None
    return "NCHW" if axis == 1 else "NHWC"


def ppp_snippet(name: str, layout: str, *, output: bool = False, tensor_layout: str | None = None) -> str:
    """Python that sets the layout with openvino.preprocess.PrePostProcessor and saves the IR."""
    port = "output" if output else "input"
    lines = [
        "import openvino as ov",
        "from openvino.preprocess import PrePostProcessor",
        "model = ov.Core().read_model('model.xml')",
        "ppp = PrePostProcessor(model)",
        f"ppp.{port}({name!r}).model().set_layout(ov.Layout({layout!r}))",
    ]
    if tensor_layout and not output:
        lines.append(f"ppp.input({name!r}).tensor().set_layout(ov.Layout({tensor_layout!r}))  # what the app feeds")
    lines += ["model = ppp.build()", "ov.save_model(model, 'model_with_layout.xml')"]
    return "\n".join(lines)
