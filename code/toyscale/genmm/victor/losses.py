"""Victor's proxy-task losses: masked language modeling, masked sentence order, frame order, masked
frame modeling, and dual video-sentence alignment (in-batch and against momentum queues)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .data import MASK


def info_nce(
    query: Tensor, keys: Tensor, positive: Tensor, temperature: float, invalid: Tensor | None = None
) -> Tensor:
    """InfoNCE: L = −mean_i log( exp(q_i·k_{p_i}/τ) / Σ_j exp(q_i·k_j/τ) ), over valid keys j.

    query (n, d) and keys (m, d) are L2-normalised; positive (n,) indexes each query's key;
    invalid (n, m) marks keys left out of the denominator (false negatives).
    """
    # s_ij = q_i · k_j / τ
    logits = query @ keys.T / temperature
    if invalid is not None:
        logits = logits.masked_fill(invalid, float("-inf"))
    return F.cross_entropy(logits, positive)


def mask_caption(tokens: Tensor, rate: float, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """MLM's input: a share `rate` of each caption's characters (at least one) replaced by [MASK].

    Returns (masked tokens, the boolean mask). [CLS] is never masked.
    """
    n, length = tokens.shape
    masked = torch.rand((n, length), generator=generator).to(tokens.device) < rate
    masked[:, 0] = False
    first = torch.randint(1, length, (n,), generator=generator).to(tokens.device)
    masked[torch.arange(n, device=tokens.device), first] = True
    return tokens.masked_fill(masked, MASK), masked


def masked_language_modeling(logits: Tensor, tokens: Tensor, masked: Tensor) -> Tensor:
    """MLM: L = −mean over masked positions m of log p(w_m | masked caption, video).

    `logits` (n, L, vocabulary) come from the cross encoder's text states.
    """
    return F.cross_entropy(logits[masked], tokens[masked])


def order_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """MSOM: L = −mean log p(π | shuffled caption, video), π each sample's own one of the k! orders.

    The logits come from the cross encoder's [CLS] state over the shuffled caption and the video.
    A shuffled caption is itself another video's true caption (its segments are alike), so the
    permutation cannot be read from the text: the model must compare the text's order with the
    frames'.
    """
    return F.cross_entropy(logits, labels)


def frame_order_loss(text: Tensor, candidates: Tensor, label: Tensor, temperature: float) -> Tensor:
    """Contrastive MFOM: the sentence picks the video's true segment order among its candidate orders.

    text (n, d): pooled sentence features; candidates (n, m, d): pooled features of the video's
    segments played in m orders, the true one among them (their positions drawn per sample);
    label (n,): where the true order sits. L = −mean log softmax_k(norm(t)·norm(c_k)/τ)[label].

    In the toy world any order of the digits is a valid video, so a video alone cannot tell its
    order was shuffled; only the sentence can. The task is contrastive training on reordered hard
    negatives, defined by the caption: the group-6 test's own format, run on training images.
    """
    t, c = F.normalize(text, dim=-1), F.normalize(candidates, dim=-1)
    # z_k = t · c_k / τ
    logits = (c @ t[:, :, None]).squeeze(-1) / temperature
    return F.cross_entropy(logits, label)


def masked_frame_loss(prediction: Tensor, frames: Tensor, masked_at: Tensor, temperature: float) -> Tensor:
    """MFM, intra- and inter-video: predict a masked frame's feature contrastively.

    For video i with frame t masked, q_i = norm(prediction_i) must pick the true frame's frozen,
    normalised feature among the other frames of video i (intra) and all frames of the other
    videos in the batch (inter): InfoNCE over the n·T frames of the batch.
    """
    n, frames_per_video, _ = frames.shape
    query = F.normalize(prediction, dim=-1)
    keys = F.normalize(frames.reshape(n * frames_per_video, -1), dim=-1)
    positive = torch.arange(n, device=frames.device) * frames_per_video + masked_at
    return info_nce(query, keys, positive, temperature)


def alignment_loss(text: Tensor, video: Tensor, caption_id: Tensor, temperature: float) -> Tensor:
    """In-batch dual video–sentence alignment: ½ (InfoNCE text→video + InfoNCE video→text).

    The other videos (captions) of the batch are the negatives; a negative with the query's
    caption id is a false negative and is masked out of the denominator.
    """
    t, v = F.normalize(text, dim=-1), F.normalize(video, dim=-1)
    n = len(caption_id)
    invalid = (caption_id[:, None] == caption_id[None, :]) & ~torch.eye(n, dtype=torch.bool, device=t.device)
    positive = torch.arange(n, device=t.device)
    # L = ½ (InfoNCE(t → v) + InfoNCE(v → t))
    return 0.5 * (info_nce(t, v, positive, temperature, invalid) + info_nce(v, t, positive, temperature, invalid))


def queue_alignment_loss(
    text: Tensor,
    video: Tensor,
    text_keys: Tensor,
    video_keys: Tensor,
    caption_id: Tensor,
    queue: MemoryQueue,
    temperature: float,
) -> Tensor:
    """Dual alignment against the momentum encoder's queues (MoCo style).

    Text query t_i must pick its video's momentum key k^v_i among the batch's keys and the video
    queue; video query v_i likewise among text keys. Keys (batch or queue) that carry the
    query's caption id, other than its own, are false negatives and are masked.
    """
    t, v = F.normalize(text, dim=-1), F.normalize(video, dim=-1)
    kt, kv = F.normalize(text_keys, dim=-1), F.normalize(video_keys, dim=-1)
    n = len(caption_id)
    ids = torch.cat([caption_id, queue.caption_id[: queue.filled]])
    invalid = caption_id[:, None] == ids[None, :]
    invalid[:, :n] &= ~torch.eye(n, dtype=torch.bool, device=t.device)
    positive = torch.arange(n, device=t.device)
    all_video = torch.cat([kv, queue.video[: queue.filled]])
    all_text = torch.cat([kt, queue.text[: queue.filled]])
    # L = ½ (InfoNCE(t → [k^v; queue^v]) + InfoNCE(v → [k^t; queue^t]))
    return 0.5 * (
        info_nce(t, all_video, positive, temperature, invalid) + info_nce(v, all_text, positive, temperature, invalid)
    )


class MemoryQueue:
    """MoCo's memory: a FIFO of momentum-encoder features (video and text) and their caption ids."""

    def __init__(self, size: int, dim: int, on: torch.device) -> None:
        self.size = size
        self.video = torch.zeros(size, dim, device=on)
        self.text = torch.zeros(size, dim, device=on)
        self.caption_id = torch.full((size,), -1, dtype=torch.long, device=on)
        self.pointer = 0
        self.filled = 0

    @torch.no_grad()
    def push(self, video: Tensor, text: Tensor, caption_id: Tensor) -> None:
        """Enqueue a batch of (normalised) keys, overwriting the oldest entries."""
        n = len(caption_id)
        index = (self.pointer + torch.arange(n)) % self.size
        self.video[index] = F.normalize(video, dim=-1)
        self.text[index] = F.normalize(text, dim=-1)
        self.caption_id[index] = caption_id
        self.pointer = int((self.pointer + n) % self.size)
        self.filled = min(self.size, self.filled + n)


@torch.no_grad()
def momentum_update(query: nn.Module, key: nn.Module, momentum: float) -> None:
    """θ_k ← m · θ_k + (1 − m) · θ_q: the key encoder trails the query encoder."""
    for q, k in zip(query.parameters(), key.parameters(), strict=True):
        k.mul_(momentum).add_(q.detach(), alpha=1 - momentum)
