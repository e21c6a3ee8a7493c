"""numpy, imported with a single-threaded BLAS.

The ratings fit is small linear algebra: BLAS threads buy nothing there, and OpenBLAS
reserves a large buffer per thread at import, which under an address-space limit
(`ulimit -v`) aborts the whole harness before it can say why. The variable is set only
for the import and then put back, so engines started later inherit the user's own.
"""

from __future__ import annotations

import os

_KEYS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_saved = {key: os.environ.get(key) for key in _KEYS}
for _key in _KEYS:
    os.environ[_key] = "1"
try:
    import numpy as np
    import numpy.typing as npt
finally:
    for _key, _value in _saved.items():
        if _value is None:
            os.environ.pop(_key, None)
        else:
            os.environ[_key] = _value

__all__ = ["np", "npt"]
