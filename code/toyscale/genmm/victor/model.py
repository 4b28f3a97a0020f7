"""The model: text, video and cross encoders (one-layer transformers) and the proxy-task heads."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .data import (
    N_FRAMES,
    VOCAB,
)


def _layer(width: int, heads: int) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(
        width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True, norm_first=True
    )


class TextEncoder(nn.Module):
    """Token + position embeddings, transformer layers, mean pooling: pooled = W · mean_l h_l.

    Which word sits where reaches the pooled feature only as far as the states h_l themselves
    bind a word to its place (position embeddings, attention and the feed-forward layer can).
    """

    def __init__(self, width: int, layers: int, heads: int, out: int, length: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(len(VOCAB), width)
        self.position = nn.Parameter(torch.randn(length, width))  # as large as the token embeddings
        self.layers = nn.Sequential(*[_layer(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.project = nn.Linear(width, out)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """(hidden states (n, L, width), pooled feature (n, out))."""
        if tokens.shape[1] != len(self.position):
            raise ValueError(f"tokens must have {len(self.position)} positions, got {tokens.shape[1]}")
        h = self.norm(self.layers(self.tokens(tokens) + self.position))
        return h, self.project(h.mean(dim=1))


class VideoEncoder(nn.Module):
    """Frame features → width, temporal position embeddings, transformer layers, mean pooling.

    pooled = W · mean_t h_t. With `positional=False` (the bag-of-digits control) there are no
    position embeddings: a transformer without them is permutation-equivariant, so the mean of
    its states, and the pooled feature, cannot depend on the order of the frames.
    """

    def __init__(self, feature_dim: int, width: int, layers: int, heads: int, out: int, positional: bool) -> None:
        super().__init__()
        self.inp = nn.Linear(feature_dim, width)
        self.mask = nn.Parameter(0.02 * torch.randn(width))  # the [MASK] frame of masked frame modeling
        self.positional = positional
        self.position = nn.Parameter(torch.randn(N_FRAMES, width))  # as large as the frame inputs
        self.layers = nn.Sequential(*[_layer(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.project = nn.Linear(width, out)

    def forward(self, frames: Tensor, masked: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(hidden states (n, T, width), pooled feature (n, out)); `masked` (n, T) bool frames → [MASK]."""
        if frames.dim() != 3 or frames.shape[1] != N_FRAMES:
            raise ValueError(f"frames must be (n, {N_FRAMES}, feature_dim), got {tuple(frames.shape)}")
        x = self.inp(frames)
        if masked is not None:
            x = torch.where(masked[..., None], self.mask.expand_as(x), x)
        if self.positional:
            x = x + self.position
        h = self.norm(self.layers(x))
        return h, self.project(h.mean(dim=1))


class CrossEncoder(nn.Module):
    """Joint layers over [text states; video states] with a modality embedding.

    MLM reads its text part; sentence-order modeling reads its first state (the caption's [CLS]).
    """

    def __init__(self, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.modality = nn.Parameter(0.02 * torch.randn(2, width))
        self.layers = nn.Sequential(*[_layer(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)

    def forward(self, text: Tensor, video: Tensor) -> Tensor:
        """The cross-encoded states (n, L + T, width): the text's first, then the video's."""
        x = torch.cat([text + self.modality[0], video + self.modality[1]], dim=1)
        return self.norm(self.layers(x))


class Victor(nn.Module):
    """The query network: three encoders and a head per proxy task.

    length: caption tokens; orders: the k! segment orders sentence-order modeling classifies.
    """

    def __init__(
        self,
        feature_dim: int,
        width: int,
        layers: int,
        heads: int,
        out: int,
        positional: bool,
        length: int,
        orders: int,
    ) -> None:
        super().__init__()
        self.text = TextEncoder(width, layers, heads, out, length)
        self.video = VideoEncoder(feature_dim, width, layers, heads, out, positional)
        self.cross = CrossEncoder(width, 1, heads)
        self.mlm_head = nn.Linear(width, len(VOCAB))  # masked language modeling: a word per position
        self.sentence_order_head = nn.Linear(width, orders)  # which of the k! segment orders
        self.frame_head = nn.Linear(width, feature_dim)  # masked frame modeling: the frame's feature
