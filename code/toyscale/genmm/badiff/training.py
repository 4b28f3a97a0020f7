"""Training the denoisers as a paired design: one shared trunk, then one fine-tuning branch per arm.

Every arm starts from the same unconditioned trunk (the same initial weights and the same
`trunk_steps` Adam steps), then fine-tunes for `branch_steps` on the *same* batches, noise,
timesteps and target draws: the plain arm as before, the conditioned arms with a quality
embedding attached (`attach_quality`, zero at the start), BADiff with the hinge too. So the
arms differ only by what their branch adds, and two arms with nothing to tell them apart stay
bit-identical. Every arm gets the same maximum budget and keeps its own best checkpoint on the
validation digits (scored every `eval_every` steps with its own training loss).
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core.seeding import seed_everything

from .codec import PIXELS, hinge_rate_loss, rate_surrogate
from .diffusion import Denoiser, attach_quality, cosine_schedule, q_sample, to_image_space, to_model_space


@dataclass(frozen=True)
class Branch:
    """What one arm's fine-tuning adds to the trunk.

    conditioned: attach the quality embedding; hinge_weight: λ of the rate hinge (0: none);
    targets: the target rates R drawn per image during fine-tuning (conditioned arms);
    received: train towards x₀ as the link delivers it at the design level L(R) (quantised to L grey
    levels) instead of x₀ itself, a reconstruction target that depends on R.
    """

    conditioned: bool
    hinge_weight: float = 0.0
    targets: tuple[float, ...] = ()
    received: bool = False

    def __post_init__(self) -> None:
        if self.hinge_weight < 0:
            raise ValueError(f"hinge_weight must be >= 0, got {self.hinge_weight}")
        if self.hinge_weight > 0 and not self.conditioned:
            raise ValueError("a hinge needs a conditioned branch (the target rate is its input)")
        if self.conditioned and not self.targets:
            raise ValueError("a conditioned branch needs the target rates it trains on")
        if self.received and not self.conditioned:
            raise ValueError("a received-target branch needs a conditioned branch (the target rate sets its level)")


@dataclass
class TrainLog:
    """One arm's training: loss per step, validation loss at each checkpoint, the step it kept."""

    losses: list[float] = field(default_factory=list)
    validation: list[tuple[int, float]] = field(default_factory=list)  # (total steps, validation loss)
    best_step: int = 0  # total Adam steps (trunk + branch) behind the weights kept
    limit: int = 0  # total Adam steps the budget allowed (trunk + branch)

    @property
    def budget(self) -> tuple[int, int]:
        """(steps behind the weights kept, steps the budget allowed): what `Result.budgets` reports."""
        return self.best_step, self.limit


@dataclass(frozen=True)
class Schedule:
    """The shared training budget: steps, batch, learning rate (cosine-decayed over trunk + branch)."""

    steps: int  # T, diffusion steps
    width: int
    blocks: int
    trunk_steps: int
    branch_steps: int
    batch_size: int
    lr: float
    eval_every: int
    min_delta: float = 0.0  # a checkpoint is a new best only when it lowers the validation loss by more than this share

    @property
    def total(self) -> int:
        return self.trunk_steps + self.branch_steps


def branch_loss(
    model: Denoiser,
    x0: Tensor,
    t: Tensor,
    noise: Tensor,
    pick: Tensor,
    branch: Branch,
    levels: Mapping[float, int],
    alpha_bar: Tensor,
) -> Tensor:
    """An arm's training loss on one batch: ‖x̂₀ − x₀‖² [+ λ · max(0, Ĥ_{L(R)}(x̂₀) − R)].

    pick: a uniform number in [0, 1) per image that selects its target from `branch.targets`, so
    that arms with different target sets still share one random stream. A `received` branch
    replaces x₀ in the reconstruction term by x₀ as received at L(R): round(x₀ (L − 1)) / (L − 1).
    """
    target = None
    if branch.conditioned:
        targets = torch.tensor(branch.targets, device=x0.device)
        which = (pick * len(branch.targets)).long().clamp_max(len(branch.targets) - 1)
        target = targets[which]
    x0_hat, _ = model(q_sample(x0, t, noise, alpha_bar), t, target)
    reference = x0
    if branch.received:
        # x₀ as the link delivers it at the design level L(R): its grey levels rounded to L − 1 steps
        steps = torch.tensor([levels[r] - 1 for r in branch.targets], device=x0.device, dtype=x0.dtype)[which][:, None]
        reference = to_model_space(torch.round(to_image_space(x0) * steps) / steps)
    loss = F.mse_loss(x0_hat, reference)
    if branch.hinge_weight > 0:
        image = to_image_space(x0_hat)
        rate = torch.zeros(x0.shape[0], device=x0.device)
        for level in sorted({levels[r] for r in branch.targets}):
            rows = torch.tensor([levels[r] == level for r in branch.targets], device=x0.device)[which]
            rate = torch.where(rows, rate_surrogate(image, level), rate)
        # L = MSE + λ · max(0, Ĥ(x̂₀) − R)
        loss = loss + branch.hinge_weight * hinge_rate_loss(rate, target)
    return loss


def _cosine_lr(step: int, schedule: Schedule) -> float:
    # lr_s = lr · (1 + cos(π s / S)) / 2 over the whole budget S = trunk + branch
    return schedule.lr * 0.5 * (1 + math.cos(math.pi * step / schedule.total))


def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def train_denoisers(
    train_x: Tensor,
    validation_x: Tensor,
    schedule: Schedule,
    branches: Mapping[str, Branch],
    *,
    seed: int,
    levels: Mapping[float, int] | None = None,
) -> dict[str, tuple[Denoiser, TrainLog]]:
    """Train the shared trunk, then every branch from it; return each arm's best-validation model and log.

    train_x, validation_x: images (n, 64) in [0, 1]; levels: the design level L(R) of every target a
    hinge trains on. Trunks and branches already trained in this process are recalled (`_MEMO`).
    """
    levels = dict(levels or {})
    for name, branch in branches.items():
        missing = [r for r in branch.targets if (branch.hinge_weight > 0 or branch.received) and r not in levels]
        if missing:
            raise ValueError(f"levels must give a codec level for the targets {missing} of branch {name!r}")
    if not branches:
        raise ValueError("branches must name at least one arm to train")
    on = train_x.device
    trunk_key = (_digest(train_x, validation_x), schedule, seed, str(on))
    keys = {
        name: (
            trunk_key,
            branch,
            tuple((r, levels[r]) for r in branch.targets) if branch.hinge_weight > 0 or branch.received else (),
        )
        for name, branch in branches.items()
    }
    todo = {name: branch for name, branch in branches.items() if keys[name] not in _MEMO}
    if todo:
        _train_branches(train_x, validation_x, schedule, todo, {name: keys[name] for name in todo}, seed, levels)
    trained = {}
    for name, branch in branches.items():
        state, log = _recall(keys[name])
        model = Denoiser(schedule.width, schedule.blocks, schedule.steps, conditioned=branch.conditioned).to(on)
        model.load_state_dict(state)
        trained[name] = (model.eval(), copy.deepcopy(log))
    return trained


#: Trunks and branches trained in this process, keyed by everything that determines them: the digits, the
#: schedule, the seed and the device (and a branch's spec and hinge levels). Training is deterministic and a
#: branch does not depend on the others beside it, so a rerun that changes one branch (a falsifier, a sweep
#: beside the book's runs) retrains only that one and gets bit-identical copies of the rest.
_MEMO: OrderedDict[tuple, Any] = OrderedDict()
MEMO_SIZE = 128  # about 1 MB each: the 20 calibration seeds' trunks and branches fit


def clear_memo() -> None:
    """Forget every trunk and branch trained so far (for tests that train from scratch)."""
    _MEMO.clear()


def _digest(*tensors: Tensor) -> str:
    h = hashlib.sha256()
    for tensor in tensors:
        h.update(repr(tuple(tensor.shape)).encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def _recall(key: tuple) -> Any:
    _MEMO.move_to_end(key)
    return _MEMO[key]


def _keep(key: tuple, value: Any) -> None:
    _MEMO[key] = value
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)


def _state(model: torch.nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _train_branches(
    train_x: Tensor,
    validation_x: Tensor,
    schedule: Schedule,
    branches: Mapping[str, Branch],
    keys: Mapping[str, tuple],
    seed: int,
    levels: Mapping[float, int],
) -> None:
    """The trunk (recalled when it was trained before), then each of `branches` from it, kept under `keys`."""
    generator = seed_everything(seed)
    on = train_x.device
    alpha_bar = cosine_schedule(schedule.steps).to(on)
    size = schedule.batch_size

    def draw() -> tuple[Tensor, Tensor, Tensor, Tensor]:
        index = torch.randint(0, train_x.shape[0], (size,), generator=generator)
        t = torch.randint(0, schedule.steps, (size,), generator=generator)
        noise = torch.randn((size, PIXELS), generator=generator)
        pick = torch.rand(size, generator=generator)
        return to_model_space(train_x[index.to(on)]), t.to(on), noise.to(on), pick.to(on)

    # fixed validation draws: every digit at two random timesteps, the same for every arm and checkpoint
    held_out = torch.Generator().manual_seed(seed + 7_919)
    repeats = 2
    v_x0 = to_model_space(validation_x).repeat(repeats, 1)
    v_t = torch.randint(0, schedule.steps, (v_x0.shape[0],), generator=held_out).to(on)
    v_noise = torch.randn(v_x0.shape, generator=held_out).to(on)
    v_pick = torch.rand(v_x0.shape[0], generator=held_out).to(on)

    trunk = Denoiser(schedule.width, schedule.blocks, schedule.steps, conditioned=False).to(on)
    optimizer = torch.optim.Adam(trunk.parameters(), lr=schedule.lr)
    trunk_key = next(iter(keys.values()))[0]
    if trunk_key in _MEMO:
        state, adam, trunk_losses, stream = _recall(trunk_key)
        trunk.load_state_dict(state)
        optimizer.load_state_dict(copy.deepcopy(adam))
        generator.set_state(stream)
    else:
        plain = Branch(conditioned=False)
        trunk_losses = []
        for step in range(schedule.trunk_steps):
            _set_lr(optimizer, _cosine_lr(step, schedule))
            loss = branch_loss(trunk, *draw(), plain, levels, alpha_bar)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            trunk_losses.append(loss.item())
        _keep(trunk_key, (_state(trunk), copy.deepcopy(optimizer.state_dict()), trunk_losses, generator.get_state()))
    batches = [draw() for _ in range(schedule.branch_steps)]

    validation = (v_x0, v_t, v_noise, v_pick)
    for name, branch in branches.items():
        model = attach_quality(trunk, seed) if branch.conditioned else _copy(trunk)
        # the same Adam state for the shared weights; the quality embedding joins with a fresh one
        fork = torch.optim.Adam(list(model.parameters())[: len(list(trunk.parameters()))], lr=schedule.lr)
        fork.load_state_dict(copy.deepcopy(optimizer.state_dict()))  # a copy: Adam updates its moments in place
        if branch.conditioned:
            fork.add_param_group({"params": list(model.quality.parameters())})
        log = TrainLog(losses=list(trunk_losses), limit=schedule.total)
        _fine_tune(model, fork, branch, batches, validation, schedule, levels, alpha_bar, log)
        _keep(keys[name], (_state(model), log))


def _fine_tune(
    model: Denoiser,
    optimizer: torch.optim.Optimizer,
    branch: Branch,
    batches: Sequence[tuple[Tensor, Tensor, Tensor, Tensor]],
    validation: tuple[Tensor, Tensor, Tensor, Tensor],
    schedule: Schedule,
    levels: Mapping[float, int],
    alpha_bar: Tensor,
    log: TrainLog,
) -> None:
    """One branch from the trunk: Adam on `batches`, scored on validation every `eval_every` steps; the best
    checkpoint (the trunk itself included) is restored and its step recorded in `log`."""
    best: tuple[float, dict[str, Tensor]] | None = None

    def checkpoint(total: int) -> None:
        nonlocal best
        model.eval()
        with torch.no_grad():
            score = branch_loss(model, *validation, branch, levels, alpha_bar).item()
        model.train()
        log.validation.append((total, score))
        # a new best must lower the loss by more than the share min_delta (as core.train.EarlyStopping's min_delta)
        if best is None or score < best[0] * (1 - schedule.min_delta):
            best = (score, {k: v.detach().clone() for k, v in model.state_dict().items()})
            log.best_step = total

    checkpoint(schedule.trunk_steps)
    for i, batch in enumerate(batches):
        _set_lr(optimizer, _cosine_lr(schedule.trunk_steps + i, schedule))
        loss = branch_loss(model, *batch, branch, levels, alpha_bar)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        log.losses.append(loss.item())
        if (i + 1) % schedule.eval_every == 0 or i + 1 == schedule.branch_steps:
            checkpoint(schedule.trunk_steps + i + 1)
    model.load_state_dict(best[1])
    model.eval()


def _copy(model: Denoiser) -> Denoiser:
    twin = Denoiser(model.width, len(model.blocks), model.steps, conditioned=False).to(next(model.parameters()).device)
    twin.load_state_dict(model.state_dict())
    return twin


def steps_used(logs: Sequence[TrainLog]) -> list[int]:
    """The total Adam steps behind each kept checkpoint."""
    return [log.best_step for log in logs]
