"""Element types of tensors."""

from __future__ import annotations

import enum

import numpy as np


class DType(enum.Enum):
    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.value)

    @property
    def bits(self) -> int:
        return 8 if self is DType.BOOL else self.np.itemsize * 8

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def is_float(self) -> bool:
        return self.value.startswith("float")

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.value.startswith(("int", "uint"))

    @property
    def is_signed(self) -> bool:
        return self.value.startswith("int") or self.is_float

    @property
    def is_unsigned(self) -> bool:
        return self.value.startswith("uint")

    @property
    def is_bool(self) -> bool:
        return self is DType.BOOL

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> DType:
        name = np.dtype(dtype).name
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unsupported numpy dtype {name}") from None

    @classmethod
    def parse(cls, text: str) -> DType | None:
        """Parse a Relay dtype name (``int`` and ``float`` mean 32 bits);
        ``None`` when ``text`` names no dtype."""
        text = _ALIASES.get(text, text)
        try:
            return cls(text)
        except ValueError:
            return None


_ALIASES = {"int": "int32", "float": "float32", "uint": "uint32", "double": "float64"}
