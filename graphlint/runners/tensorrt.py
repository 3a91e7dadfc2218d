"""TensorRT, where the ``tensorrt`` package and a CUDA GPU are present: parse the ONNX file, build
an engine with one optimization profile covering the sizes to be fed, run it. Every parser and
builder error is reported as the engine's own message. Nothing imports this module on a machine
without TensorRT: :func:`graphlint.confirm.engines.available` checks for the package and a GPU
first (``nvidia-smi`` or ``/dev/nvidia0``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphlint.runners import RunError, failure

NAME = "tensorrt"
DISTRIBUTIONS = ("tensorrt", "tensorrt-cu12", "tensorrt-cu13")


class Session:
    engine = NAME
    device = "gpu"
    precision = None

    def __init__(self, path: str, config: dict[str, Any], outputs: list[str] | None = None,
                 profile: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] | None = None) -> None:
        import tensorrt as trt

        self.trt = trt
        self.version = trt.__version__
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(path):
            errors = [parser.get_error(i) for i in range(parser.num_errors)]
            first = errors[0] if errors else None
            node = first.node_name() if first is not None and hasattr(first, "node_name") else None
            raise RunError("TensorRT's ONNX parser: " + "; ".join(str(e.desc()) for e in errors[:3]), node or None)
        for name in outputs or ():
            for i in range(network.num_layers):
                layer = network.get_layer(i)
                for j in range(layer.num_outputs):
                    if layer.get_output(j).name == name:
                        network.mark_output(layer.get_output(j))
        build = builder.create_builder_config()
        for key, value in config.items():
            if key == "workspace":
                build.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(value))
            elif key in ("fp16", "bf16", "int8") and value:
                build.set_flag(getattr(trt.BuilderFlag, key.upper()))
        if profile:
            prof = builder.create_optimization_profile()
            for name, (lo, opt, hi) in profile.items():
                prof.set_shape(name, lo, opt, hi)
            build.add_optimization_profile(prof)
        try:
            blob = builder.build_serialized_network(network, build)
        except Exception as e:
            raise failure(e) from None
        if blob is None:
            raise RunError("TensorRT's builder returned no engine (its log names the layer)")
        self.engine_ = trt.Runtime(logger).deserialize_cuda_engine(blob)
        self.context = self.engine_.create_execution_context()
        names = [self.engine_.get_tensor_name(i) for i in range(self.engine_.num_io_tensors)]
        mode = trt.TensorIOMode.INPUT
        self.inputs = [n for n in names if self.engine_.get_tensor_mode(n) == mode]
        self.outputs = [n for n in names if self.engine_.get_tensor_mode(n) != mode]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch  # TensorRT's Python API takes device pointers; torch is how CUDA memory is had here

        trt, eng, ctx = self.trt, self.engine_, self.context
        keep = []
        try:
            for name in self.inputs:
                t = torch.from_numpy(np.ascontiguousarray(feeds[name])).cuda()
                keep.append(t)
                ctx.set_input_shape(name, tuple(t.shape))
                ctx.set_tensor_address(name, t.data_ptr())
            out: dict[str, Any] = {}
            for name in self.outputs:
                shape = tuple(ctx.get_tensor_shape(name))
                dtype = torch.from_numpy(np.zeros(0, trt.nptype(eng.get_tensor_dtype(name)))).dtype
                out[name] = torch.empty(shape, dtype=dtype, device="cuda")
                ctx.set_tensor_address(name, out[name].data_ptr())
            stream = torch.cuda.current_stream()
            if not ctx.execute_async_v3(stream.cuda_stream):
                raise RunError("TensorRT's execution context failed (execute_async_v3 returned false)")
            stream.synchronize()
        except RunError:
            raise
        except Exception as e:
            raise failure(e) from None
        return {k: v.cpu().numpy() for k, v in out.items()}
