r"""The layer descriptions, split as neural-tangents' ``stax`` is by what a layer does; this module
re-exports them all (the names :mod:`ntkrepro.kernels.fast` exports).

* :mod:`.base`          -- states (:class:`Single`, :class:`Pair`), modes and layouts, :class:`Layer`,
  the inputs' covariances;
* :mod:`.linear`        -- ``Dense``, ``Conv`` (weights: :math:`K' = \sigma_w^2\mathcal A(K) + \sigma_b^2`);
* :mod:`.elementwise`   -- ``Relu`` (the arc-cosine kernel);
* :mod:`.normalization` -- ``LayerNorm``;
* :mod:`.pooling`       -- ``Flatten``, ``GlobalAvgPool``, ``AvgPool`` (pooling and readout);
* :mod:`.attention`     -- ``GlobalSelfAttention``;
* :mod:`.combinators`   -- ``Identity``, ``FanOut``, ``FanInSum``, ``serial``, ``parallel``.

Every recursion is neural-tangents 0.6.5 ``stax`` (file and function named in each docstring)
restricted to the arguments the H4 / H6 models use; anything else raises ``NotImplementedError`` in
the fast backend (the ``stax`` layer is still built).
"""

from __future__ import annotations

from ntkrepro.kernels._src.attention import GlobalSelfAttention
from ntkrepro.kernels._src.base import (MODES, Inputs, Layer, Pair, Plan, Single, convert_pair, convert_single, fast_inputs,
                                        input_pair, input_single, max_mode)
from ntkrepro.kernels._src.combinators import FanInSum, FanOut, Identity, parallel, serial
from ntkrepro.kernels._src.elementwise import Relu
from ntkrepro.kernels._src.linear import Conv, Dense, conv_offsets
from ntkrepro.kernels._src.normalization import LayerNorm
from ntkrepro.kernels._src.pooling import AvgPool, Flatten, GlobalAvgPool


#: The ``stax`` names this module provides (same constructors, same arguments).
STAX_NAMES = frozenset({"AvgPool", "Conv", "Dense", "FanInSum", "FanOut", "Flatten", "GlobalAvgPool",
                        "GlobalSelfAttention", "Identity", "LayerNorm", "Relu", "parallel", "serial"})

__all__ = sorted(STAX_NAMES | {"MODES", "Inputs", "Layer", "Pair", "Plan", "Single", "conv_offsets", "convert_pair", "convert_single",
                               "fast_inputs", "input_pair", "input_single", "max_mode"})
