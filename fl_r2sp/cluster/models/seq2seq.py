"""A small encoder-decoder transformer for synthetic sequence-to-sequence tasks.

The ToN paper's Fig. 14 trains T5-Small (about 60 M parameters) on WMT16. This stand-in keeps
the shape (an encoder-decoder built from :class:`torch.nn.Transformer`, token embeddings, a
linear output projection, teacher forcing) at a CPU-friendly size and without downloaded
weights; it learns the "copy" and "reverse" tasks of :mod:`fl_r2sp.cluster.data`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

#: Token id of the begin-of-sequence marker that starts every decoder input.
BOS = 0


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder transformer over a vocabulary of ``vocab_size`` tokens (0 = BOS).

    Input ``x`` is an int64 tensor ``(batch, 2, length)``: ``x[:, 0]`` the source tokens,
    ``x[:, 1]`` the decoder input (BOS followed by the target shifted right). The output is
    ``(batch, length, vocab_size)`` logits for the target tokens. Defaults: d_model 128, 4
    heads, 2 encoder and 2 decoder layers, feed-forward 512, no dropout (so that gradients
    are deterministic): 936,970 parameters for a vocabulary of 10.

    Parameters
    ----------
    vocab_size : int, default 10
        Number of token ids (BOS included).
    d_model : int, default 128
        Embedding width.
    nhead : int, default 4
        Attention heads.
    layers : int, default 2
        Encoder layers, and as many decoder layers.
    dim_feedforward : int, default 512
        Feed-forward width.
    max_len : int, default 64
        Longest sequence the learned position embedding covers.
    """

    def __init__(
        self,
        vocab_size: int = 10,
        d_model: int = 128,
        nhead: int = 4,
        layers: int = 2,
        dim_feedforward: int = 512,
        max_len: int = 64,
    ) -> None:
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2 (BOS plus one token), got {vocab_size}")
        self.d_model = d_model
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.core = nn.Transformer(
            d_model=d_model,
            nhead=nhead,
            num_encoder_layers=layers,
            num_decoder_layers=layers,
            dim_feedforward=dim_feedforward,
            dropout=0.0,
            batch_first=True,
        )
        self.out = nn.Linear(d_model, vocab_size)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        return self.embed(tokens) * math.sqrt(self.d_model) + self.position(pos)[None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(batch, 2, length)`` token ids to ``(batch, length, vocab)`` logits."""
        if x.dim() != 3 or x.shape[1] != 2:
            raise ValueError(f"expected (batch, 2, length) token ids, got shape {tuple(x.shape)}")
        if x.shape[2] > self.max_len:
            raise ValueError(f"sequence length {x.shape[2]} exceeds max_len {self.max_len}")
        src, tgt = x[:, 0], x[:, 1]
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=x.device)
        hidden = self.core(self._embed(src), self._embed(tgt), tgt_mask=causal, tgt_is_causal=True)
        return self.out(hidden)
