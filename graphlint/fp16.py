"""For models converted with ``onnxruntime.transformers.float16.convert_float_to_float16``.

The converter computes a blocked node (``node_block_list``) in fp32 between a Cast to fp32 on
each input and a Cast back to fp16 on each output, so the value between two blocked nodes is
still stored in fp16: an overflow there (a squared activation above 255.9) survives the block
list. :func:`join_blocked` drops those Cast pairs, so a chain of blocked nodes stays in fp32 end
to end (measured on a Llama export: 0.54 logit drift with the block list alone, 0.0006 joined;
rules/data/precision.toml, engine ``ort-fp16-converted``).
"""

from __future__ import annotations

import onnx


def join_blocked(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop the converter's fp32 -> fp16 -> fp32 Cast pairs between two blocked nodes (in place).

    The converter names them ``<v>_cast_to_fp16_node`` (the blocked producer's fp32 result to
    the fp16 value ``v``) and ``<v>_cast_to_fp32_node`` (``v`` back to fp32 for a blocked
    consumer). The consumer is rewired to the producer's fp32 result; the fp16 Cast stays while
    anything else reads ``v``. Casts the converter did not make are left alone.
    """
    graph = model.graph
    to16 = {n.output[0]: n for n in graph.node
            if n.op_type == "Cast" and n.name == f"{n.output[0]}_cast_to_fp16_node"}
    rename: dict[str, str] = {}
    drop: set[int] = set()
    for i, n in enumerate(graph.node):
        if n.op_type == "Cast" and n.input[0] in to16 and n.name == f"{n.input[0]}_cast_to_fp32_node":
            rename[n.output[0]] = to16[n.input[0]].input[0]
            drop.add(i)
    kept = [n for i, n in enumerate(graph.node) if i not in drop]
    for n in kept:
        for j, name in enumerate(n.input):
            n.input[j] = rename.get(name, name)
    used = {name for n in kept for name in n.input} | {o.name for o in graph.output}
    kept = [n for n in kept if not (n.op_type == "Cast" and n.output[0] in to16 and n.output[0] not in used)]
    del graph.node[:]
    graph.node.extend(kept)
    return model
