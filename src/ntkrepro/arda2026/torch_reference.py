r"""Plain PyTorch-autograd projected-GD step of the Arda et al. transformer (benchmark baseline and test oracle).

The same model and step as :mod:`ntkrepro.arda2026.model`, written the way a PyTorch user (and the
authors' code) writes it: an ``einsum`` forward over all inputs at once, ``loss.backward()`` for the
gradients, an in-place SGD update and the per-head projection:

.. math::

    z_{ji} = X_j^\top W_i x_{jT},\quad \alpha_{ji} = \operatorname{softmax}(z_{ji}),\quad
    f_j = \tfrac{1}{\sqrt m}\textstyle\sum_i c_i \tanh(U_i^\top X_j \alpha_{ji}),\quad
    \mathcal L = \tfrac1n\textstyle\sum_j (f_j - y_j)^2,

    \theta \leftarrow \Pi_\rho(\theta - \eta\nabla\mathcal L),\qquad
    \Pi_\rho:\ \lVert W_i - W_i(0)\rVert_F,\ \lVert U_i - U_i(0)\rVert,\ |c_i - c_i(0)| \le \rho/\sqrt m .

Nothing here is used by the claims; :mod:`ntkrepro.arda2026.benchmark` times it beside the
project's step and the tests check that its autograd gradients and its projected step agree with
the project's closed-form (Lemma 1) ones.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def forward(W: torch.Tensor, U: torch.Tensor, c: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    r""":math:`f(X_j) = m^{-1/2}\sum_i c_i\tanh(U_i^\top X_j\operatorname{softmax}(X_j^\top W_i x_{jT}))`,
    ``X (n, d, T)`` -> ``(n,)``."""
    xT = X[:, :, -1]
    q = torch.einsum("mde,ne->nmd", W, xT)  # W_i x_T
    z = torch.einsum("ndt,nmd->nmt", X, q)  # logits
    a = torch.einsum("ndt,nmt->nmd", X, torch.softmax(z, dim=-1))
    h = torch.tanh(torch.einsum("nmd,md->nm", a, U))
    return h @ c / math.sqrt(c.shape[0])


class AutogradStep:
    """Projected full-batch GD on MSE with gradients by ``torch.autograd`` (parameters updated in place).

    ``W (m, d, d)``, ``U (m, d)``, ``c (m,)`` (any array-likes); the initial values are the centres
    of the projection balls. :meth:`step` does one step and returns the loss before it.
    """

    def __init__(self, W, U, c, X, y, *, lr: float, rho: float, dtype: torch.dtype = torch.float32):
        def t(a):
            return torch.tensor(np.array(a), dtype=dtype)

        self.W, self.U, self.c = (t(a).requires_grad_() for a in (W, U, c))
        self.W0, self.U0, self.c0 = (p.detach().clone() for p in (self.W, self.U, self.c))
        self.X, self.y = t(X), t(y)
        self.lr, self.rho = float(lr), float(rho)

    def loss(self) -> torch.Tensor:
        """:math:`\\mathcal L(\\theta)` as an autograd graph."""
        return torch.mean((forward(self.W, self.U, self.c, self.X) - self.y) ** 2)

    def grads(self) -> tuple[float, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Loss and ``(dL/dW, dL/dU, dL/dc)`` by ``loss.backward()``."""
        for p in (self.W, self.U, self.c):
            p.grad = None
        loss = self.loss()
        loss.backward()
        return float(loss.detach()), (self.W.grad, self.U.grad, self.c.grad)

    @torch.no_grad()
    def project_(self) -> None:
        """Per-head projection onto the balls of radius :math:`\\rho/\\sqrt m` around the initial values."""
        m = self.c.shape[0]
        r = self.rho / math.sqrt(m)
        for p, p0 in ((self.W, self.W0), (self.U, self.U0)):
            delta = p - p0
            norm = delta.reshape(m, -1).norm(dim=1).clamp(min=1e-30)
            scale = torch.clamp(r / norm, max=1.0).reshape((m,) + (1,) * (p.dim() - 1))
            p.copy_(p0 + delta * scale)
        self.c.copy_(self.c0 + (self.c - self.c0).clamp(-r, r))

    def step(self) -> float:
        """One step :math:`\\theta \\leftarrow \\Pi(\\theta - \\eta\\nabla\\mathcal L)`; returns the loss before it."""
        loss, grads = self.grads()
        with torch.no_grad():
            for p, g in zip((self.W, self.U, self.c), grads):
                p.sub_(self.lr * g)
        self.project_()
        return loss

    def params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Current ``(W, U, c)`` as numpy arrays."""
        return tuple(p.detach().numpy().copy() for p in (self.W, self.U, self.c))
