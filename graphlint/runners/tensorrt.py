"""TensorRT, where the ``tensorrt`` package and a CUDA GPU are present: parse the ONNX file, build
an engine with one optimization profile covering the sizes to be fed, run it. Every parser and
builder error is reported as the engine's own message (the parser's errors, and what the builder
logged at error severity). Nothing imports this module on a machine without TensorRT:
:func:`graphlint.confirm.engines.engine_for` checks for the package and a GPU first (``nvidia-smi`` or
``/dev/nvidia0``), without importing either.

Written against TensorRT 10's Python API: networks are always explicit-batch (``create_network(0)``),
I/O tensors are addressed by name (``set_input_shape``, ``set_tensor_address``, ``execute_async_v3``),
and every output goes through an ``IOutputAllocator``, so outputs whose shape depends on the data
(NonZero, a data-dependent Reshape) are allocated once TensorRT knows their size. Device memory comes
from PyTorch when it has CUDA, else from cuda-python's runtime bindings.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from graphlint.runners import RunError, failure, one_line

NAME = "tensorrt"
DISTRIBUTIONS = ("tensorrt", "tensorrt-cu12", "tensorrt-cu13")
MAX_ERRORS = 3  # parser / builder messages joined into one RunError


class Session:
    engine = NAME
    device = "gpu"
    precision = None

    def __init__(self, path: str, config: dict[str, Any], outputs: list[str] | None = None,
                 profile: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] | None = None) -> None:
        import tensorrt as trt

        self.trt = trt
        self.version = trt.__version__
        self.log = _logger(trt)
        builder = trt.Builder(self.log)
        network = builder.create_network(0)  # TensorRT 10: explicit batch always (the flag is deprecated)
        parser = trt.OnnxParser(network, self.log)
        if not parser.parse_from_file(path):
            errors = [parser.get_error(i) for i in range(parser.num_errors)]
            node = next((_parser_node(e) for e in errors if _parser_node(e)), None)
            said = [_parser_text(e) for e in errors[:MAX_ERRORS]] or self.log.errors[:MAX_ERRORS]
            raise RunError("TensorRT's ONNX parser: " + ("; ".join(said) or "parse failed"), node)
        for name in outputs or ():
            _mark_output(network, name)
        build = builder.create_builder_config()
        for key, value in config.items():
            if key == "workspace":
                build.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(value))
            elif key in ("fp16", "bf16", "int8") and value:
                build.set_flag(getattr(trt.BuilderFlag, key.upper()))
                self.precision = {"fp16": "float16", "bf16": "bfloat16"}.get(key, self.precision)
        dynamic = []
        for i in range(network.num_inputs):
            inp = network.get_input(i)
            if any(d < 0 for d in inp.shape):
                dynamic.append(inp.name)
        if dynamic:  # an engine of a network with dynamic inputs needs a profile for each of them
            prof = builder.create_optimization_profile()
            missing = [n for n in dynamic if n not in (profile or {})]
            if missing:
                raise RunError(f"no size to build TensorRT's optimization profile for input '{missing[0]}'")
            for name in dynamic:
                lo, opt, hi = (tuple(int(d) for d in s) for s in profile[name])  # type: ignore[index]
                prof.set_shape(name, lo, opt, hi)
            build.add_optimization_profile(prof)
        self.log.errors.clear()
        try:
            blob = builder.build_serialized_network(network, build)
        except Exception as e:
            raise failure(e) from None
        if blob is None:
            raise self.log.error("TensorRT's builder", "it returned no engine")
        self.runtime = trt.Runtime(self.log)  # outlives the engine
        self.engine_ = self.runtime.deserialize_cuda_engine(blob)
        if self.engine_ is None:
            raise self.log.error("TensorRT's runtime", "it could not deserialize the engine it built")
        self.context = self.engine_.create_execution_context()
        names = [self.engine_.get_tensor_name(i) for i in range(self.engine_.num_io_tensors)]
        mode = trt.TensorIOMode.INPUT
        self.inputs = [n for n in names if self.engine_.get_tensor_mode(n) == mode]
        self.outputs = [n for n in names if self.engine_.get_tensor_mode(n) != mode]
        self.memory = _device_memory()

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        trt, eng, ctx, mem = self.trt, self.engine_, self.context, self.memory
        held: list[Any] = []  # device buffers alive until the outputs are copied back
        try:
            for name in self.inputs:
                arr = np.ascontiguousarray(feeds[name].astype(trt.nptype(eng.get_tensor_dtype(name)), copy=False))
                if not ctx.set_input_shape(name, tuple(int(d) for d in arr.shape)):
                    raise self.log.error("TensorRT", f"input '{name}' {tuple(arr.shape)} is outside the engine's "
                                                     f"optimization profile")
                if eng.is_shape_inference_io(name):  # a shape tensor: TensorRT reads it from host memory
                    held.append(arr)
                    ctx.set_tensor_address(name, arr.ctypes.data)
                    continue
                buf, ptr = mem.upload(arr)
                held.append(buf)
                ctx.set_tensor_address(name, ptr)
            allocator = _output_allocator(trt, mem)
            for name in self.outputs:
                ctx.set_output_allocator(name, allocator)
            stream = mem.stream()
            self.log.errors.clear()
            if not ctx.execute_async_v3(mem.handle(stream)):
                raise self.log.error("TensorRT's execution context", "execute_async_v3 returned false")
            mem.synchronize(stream)
            out = {}
            for name in self.outputs:
                dtype = np.dtype(trt.nptype(eng.get_tensor_dtype(name)))
                shape = allocator.shapes.get(name, tuple(ctx.get_tensor_shape(name)))
                out[name] = mem.download(allocator.buffers.get(name), shape, dtype)
        except RunError:
            raise
        except Exception as e:
            raise failure(e) from None
        finally:
            held.clear()
        return out


def _logger(trt: Any) -> Any:
    """A TensorRT logger that keeps what the parser and builder report at error severity."""

    class Log(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            if severity in (trt.ILogger.Severity.INTERNAL_ERROR, trt.ILogger.Severity.ERROR):
                self.errors.append(one_line(msg))

        def error(self, who: str, fallback: str) -> RunError:
            from graphlint.runners import node_named

            said = self.errors[:MAX_ERRORS]
            return RunError(f"{who}: " + ("; ".join(said) if said else fallback),
                            next((n for n in map(node_named, said) if n), None))

    return Log()


def _parser_node(err: Any) -> str | None:
    """The ONNX node a parser error names (``node_name()``, TensorRT 8.6+), if it names one."""
    try:
        return err.node_name() or None
    except AttributeError:
        return None


def _parser_text(err: Any) -> str:
    text = str(err.desc()).strip()
    op = getattr(err, "node_operator", None)
    node = _parser_node(err)
    where = f" (node '{node}'{f', {op()}' if op is not None and op() else ''})" if node else ""
    return one_line(text) + where


def _mark_output(network: Any, name: str) -> None:
    """Make the intermediate tensor ``name`` an output of the network (bisection asks for values there)."""
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_outputs):
            t = layer.get_output(j)
            if t.name == name and not t.is_network_output:
                network.mark_output(t)
                return


def _output_allocator(trt: Any, mem: Any) -> Any:
    """An IOutputAllocator for every output: TensorRT asks for each output's bytes once it knows them
    (data-dependent shapes included) and says the shape."""

    class Outputs(trt.IOutputAllocator):
        def __init__(self) -> None:
            trt.IOutputAllocator.__init__(self)
            self.buffers: dict[str, Any] = {}
            self.shapes: dict[str, tuple[int, ...]] = {}

        def reallocate_output(self, tensor_name: str, memory: int, size: int, alignment: int) -> int:
            buf, ptr = mem.alloc(max(int(size), 1))
            self.buffers[tensor_name] = buf
            return ptr

        def reallocate_output_async(self, tensor_name: str, memory: int, size: int, alignment: int,
                                    stream: int) -> int:
            return self.reallocate_output(tensor_name, memory, size, alignment)

        def notify_shape(self, tensor_name: str, shape: Any) -> None:
            self.shapes[tensor_name] = tuple(int(d) for d in shape)

    return Outputs()


def _device_memory() -> Any:
    """CUDA memory for TensorRT's tensors: PyTorch's when it has CUDA, else cuda-python's runtime."""
    try:
        import torch

        if torch.cuda.is_available():
            return _TorchMemory(torch)
    except ImportError:
        pass
    try:
        from cuda.bindings import runtime as cudart  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import cudart  # older cuda-python
        except ImportError:
            raise RunError("running a TensorRT engine needs CUDA memory from PyTorch with CUDA or from "
                           "cuda-python (pip install cuda-python); neither is installed") from None
    return _CudartMemory(cudart)


class _TorchMemory:
    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def alloc(self, nbytes: int) -> tuple[Any, int]:
        t = self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")
        return t, t.data_ptr()

    def upload(self, arr: np.ndarray) -> tuple[Any, int]:
        raw = np.frombuffer(arr.tobytes() or b"\0", dtype=np.uint8)
        t = self.torch.from_numpy(raw.copy()).cuda()
        return t, t.data_ptr()

    def download(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if buf is None or n == 0:
            return np.zeros(shape, dtype)
        return buf[:n].cpu().numpy().view(dtype).reshape(shape)

    def stream(self) -> Any:
        return self.torch.cuda.current_stream()

    def handle(self, stream: Any) -> int:
        return stream.cuda_stream

    def synchronize(self, stream: Any) -> None:
        stream.synchronize()


class _CudartMemory:
    """cuda-python's runtime: buffers freed when their holder is collected."""

    def __init__(self, cudart: Any) -> None:
        self.rt = cudart

    def _check(self, result: Any) -> Any:
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RunError(f"CUDA runtime error {err}")
        return rest[0] if rest else None

    def alloc(self, nbytes: int) -> tuple[Any, int]:
        ptr = int(self._check(self.rt.cudaMalloc(nbytes)))
        return _Freed(self.rt, ptr), ptr

    def upload(self, arr: np.ndarray) -> tuple[Any, int]:
        buf, ptr = self.alloc(max(arr.nbytes, 1))
        if arr.nbytes:
            self._check(self.rt.cudaMemcpy(ptr, arr.ctypes.data, arr.nbytes,
                                           self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice))
        return buf, ptr

    def download(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        out = np.empty(shape, dtype)
        if buf is not None and out.nbytes:
            self._check(self.rt.cudaMemcpy(out.ctypes.data, buf.ptr, out.nbytes,
                                           self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost))
        return out

    def stream(self) -> Any:
        return self._check(self.rt.cudaStreamCreate())

    def handle(self, stream: Any) -> int:
        return int(stream)

    def synchronize(self, stream: Any) -> None:
        self._check(self.rt.cudaStreamSynchronize(stream))
        self._check(self.rt.cudaStreamDestroy(stream))


class _Freed:
    def __init__(self, rt: Any, ptr: int) -> None:
        self.rt, self.ptr = rt, ptr

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.rt.cudaFree(self.ptr)
