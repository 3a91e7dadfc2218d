"""One spelling for element types across ONNX (TensorProto enums) and OpenVINO (precisions)."""

from __future__ import annotations

import numpy as np

# ONNX TensorProto.DataType -> normalized name (onnx/onnx.proto3)
ONNX_DTYPES: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
    19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
    24: "float8e8m0", 25: "uint2", 26: "int2",
}
ONNX_ENUM: dict[str, int] = {v: k for k, v in ONNX_DTYPES.items()}

# OpenVINO element_type / port precision -> normalized name
OV_DTYPES: dict[str, str] = {
    "f32": "float32", "fp32": "float32", "f16": "float16", "fp16": "float16", "bf16": "bfloat16",
    "f64": "float64", "fp64": "float64", "i64": "int64", "i32": "int32", "i16": "int16",
    "i8": "int8", "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8",
    "boolean": "bool", "bool": "bool", "u1": "bool", "i4": "int4", "u4": "uint4",
    "string": "string", "f8e4m3": "float8e4m3fn", "f8e5m2": "float8e5m2", "nf4": "nf4",
    "dynamic": None, "undefined": None,
}

# Short names used in support tables (TensorRT docs spell types this way).
SHORT: dict[str, str] = {
    "float32": "FP32", "float16": "FP16", "bfloat16": "BF16", "float64": "DOUBLE",
    "int64": "INT64", "int32": "INT32", "int8": "INT8", "uint8": "UINT8", "bool": "BOOL",
    "int4": "INT4", "float8e4m3fn": "FP8", "float4e2m1": "FP4", "string": "STRING",
    "int16": "INT16", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
}

FLOAT_TYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
INT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})

_NUMPY: dict[str, type] = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64, "int64": np.int64,
    "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "uint16": np.uint16,
    "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
}


def onnx_dtype(enum: int) -> str | None:
    return ONNX_DTYPES.get(enum) if enum else None


def ov_dtype(precision: str | None) -> str | None:
    if not precision:
        return None
    return OV_DTYPES.get(precision.lower(), precision.lower())


def itemsize(dtype: str) -> int | None:
    """Bytes per element, or None for types without a fixed numpy width (string, 4-bit...)."""
    t = _NUMPY.get(dtype)
    return np.dtype(t).itemsize if t else None


def to_numpy(dtype: str) -> np.dtype | None:
    t = _NUMPY.get(dtype)
    return np.dtype(t) if t else None
