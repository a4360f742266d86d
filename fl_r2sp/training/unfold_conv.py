"""Convolutions as unfold + one matrix product, for stacks of small CNNs.

Under ``vmap`` over K stacked models, ``F.conv2d`` with a stacked weight
becomes one grouped convolution of K groups; for 128 LeNets those grouped
kernels are slow on GPUs (few channels per group). Written as ``unfold``
(im2col) followed by a matrix product, the same layer under ``vmap`` is one
batched matrix product of K (out, in * kh * kw) @ (in * kh * kw, batch * L)
products, a kernel GPUs run near their peak. The result is the same
convolution up to the summation order of its dot products; the price is
the unfolded input, ``kh * kw`` times the layer's input, held for the
backward pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _pair(v: int | tuple[int, ...]) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    return int(v[0]), int(v[1])


def unfold_conv2d(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1),
) -> torch.Tensor:
    """``F.conv2d`` (groups 1, zero padding) as unfold + one matrix product.

    Parameters
    ----------
    x : torch.Tensor
        Input (batch, in, H, W).
    weight : torch.Tensor
        (out, in, kh, kw).
    bias : torch.Tensor or None
        (out,), or None for none.
    stride, padding, dilation : tuple of int, defaults (1, 1), (0, 0), (1, 1)
        As ``F.conv2d``'s.

    Returns
    -------
    torch.Tensor
        (batch, out, H', W'): a transposed view of an (out, batch, H', W') tensor.
    """
    n, _, h, w = x.shape
    out, _, kh, kw = weight.shape
    cols = F.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    # (in*kh*kw, batch*L): the whole batch in one product, so that vmap over a
    # stack makes it one bmm with K large products rather than K*batch small ones.
    flat = cols.transpose(0, 1).reshape(cols.shape[1], n * oh * ow)
    y = weight.reshape(out, -1) @ flat
    if bias is not None:
        y = y + bias[:, None]
    return y.reshape(out, n, oh, ow).transpose(0, 1)


class UnfoldConv2d(nn.Conv2d):
    """``nn.Conv2d`` computed by :func:`unfold_conv2d`; same parameters, same names."""

    def _conv_forward(
        self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        return unfold_conv2d(
            input,
            weight,
            bias,
            _pair(self.stride),
            _pair(self.padding),  # type: ignore[arg-type]  # str padding is never converted
            _pair(self.dilation),
        )


def use_unfold_convs(model: nn.Module) -> int:
    """Replace, in place, every plain ``nn.Conv2d`` of ``model`` by an :class:`UnfoldConv2d`.

    A plain convolution has groups 1, zero padding given as numbers and no
    subclass; others (grouped, 'same' padding, reflect padding) are kept.
    The new modules are built on the old weight's device (``meta`` for the
    stacked step's template) and hold no copy of the old weights.

    Returns
    -------
    int
        Number of convolutions replaced.
    """
    done = 0
    for parent in list(model.modules()):
        for name, conv in list(parent.named_children()):
            if type(conv) is not nn.Conv2d or conv.groups != 1 or conv.padding_mode != "zeros":
                continue
            if isinstance(conv.padding, str):
                continue
            new = UnfoldConv2d(
                conv.in_channels,
                conv.out_channels,
                conv.kernel_size,  # type: ignore[arg-type]
                stride=conv.stride,  # type: ignore[arg-type]
                padding=conv.padding,  # type: ignore[arg-type]
                dilation=conv.dilation,  # type: ignore[arg-type]
                bias=conv.bias is not None,
                device=conv.weight.device,
            )
            setattr(parent, name, new)
            done += 1
    return done
