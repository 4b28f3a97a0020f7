"""CombatVLA: act first, explain after — truncated action-of-thought in a toy combat game.

Peng Chen, Pi Bu, Yingyao Wang, Xinyi Wang, Ziming Wang, Jie Guo, Yingxiu Zhao, Qi Zhu, Jun Song,
Siran Yang, Jiamang Wang and Bo Zheng. *CombatVLA: An Efficient Vision-Language-Action Model
for Combat Tasks in 3D Action Role-Playing Games.* ICCV 2025 (arXiv:2503.09527).

**The problem.** A vision-language model that plays an action game has to decide within a
fraction of a second: the enemy's blow lands whether or not the model has finished thinking.
Agent frameworks built on large VLMs (Cradle, VARP) call the model several times per decision
(perception, reflection, planning) and need a minute per action. Chain-of-thought helps a model
understand a fight, but every explanation token it writes before the action is latency.

**The method.** An *action tracker* records the game's frames and the player's key and mouse
events in two threads, each with its own timestamps, and pairs every action with the frames
before it. The pairs are written as *action-of-thought* (AoT): an action and an explanation
(the enemy's state, one's own, why). A 3B VLM is trained progressively: video-level AoT (a clip
→ its actions), frame-level AoT (the frames before an action → explanation, then action) and
*truncated* AoT, where the action comes first, then a `<TRUNC>` token, then the explanation.
At inference decoding stops at `<TRUNC>`: the action is out before any explanation is written.
An execution loop grabs the latest frames, calls the model once and presses its keys. The
paper reports 1.85 s per decision against 61.7 s (Cradle, 5 calls) and 90.2 s (VARP, 10 calls),
truncation alone halving latency (116.6 → 43.1 output tokens, 3.73 → 1.85 s), a higher score on
its combat-understanding benchmark CUBench, and task success above human players.

**What the toy keeps.** A duel in numpy (`game`), drawn as 10 × 12 grey frames with HP,
potion and cooldown bars, an enemy of three kinds (a swordsman, a lancer, a duelist; a sidestep
beats only the swordsman's and the duelist's thrust, and the duelist winds up a tick faster) that
approaches, winds up with a visible cue (thrust or sweep), strikes and recovers, and the paper's
ten keys; a scripted expert that always wins where a random player always loses. The duel was made
hard enough for a rule written first: neither no thought nor full AoT may win more than nine
fights in ten paused on validation fights (`SATURATION_CEILING`). An `ActionTracker` (`tracker`)
logs frames and keys on jittered, out-of-order streams and pairs each key only with frames stamped
strictly before it. AoT sequences (`aot`) of six explanation slots (enemy phase, when it strikes,
distance, own HP, potions, ready cooldowns) and one key, in the three formats; no slot names the
enemy's kind, so the explanation does not determine the key. A tiny VLA (`model`): an MLP over the
last k frames feeding a small causal transformer, with truncated decoding. Every arm trains at
equal steps after a shared video-level stage and keeps its best validation weights, which lie
inside the budget (`experiment`): no thought, full AoT, full AoT trained to act for the tick its
decision lands on (latency-aware, trained per lead), and the method, truncated AoT by the paper's
curriculum (frame-level, then truncated); the strongest alternative is picked per seed on
validation fights. A toy CUBench (`evaluate`) from the game's ground truth, and closed-loop play
(`evaluate.fight`) both paused and in real time, where every decoded token costs game time. The
claims (`claims`) are calibrated on seeds apart from the book's; what the toy finds is in the
chapter's claims table, read from the committed results (`results`).

**What it drops.** 3D games, pixels at screen resolution, a pretrained 3B VLM, natural-language
explanations (slots stand in for them), the contrastive part of the action-weighted loss,
mouse control, and human players: the scripted expert is the reference, so the toy makes no
claim about beating humans.
"""

from .aot import (
    ACTION0,
    BOS,
    EOS,
    FORMATS,
    MAX_LEAD,
    MAX_LEN,
    PAD,
    SLOT_NAMES,
    SLOTS,
    TOKENS,
    TRUNC,
    VID,
    VOCAB,
    Recording,
    describe,
    record,
    sequences,
    thought_tokens,
    thought_values,
)
from .claims import (
    BENCH_MARGIN,
    CLAIMS,
    FALSIFIERS,
    MULTI_TOKEN_RATIO,
    PAUSED_BAND,
    REALTIME_MARGIN,
    TIME_RATIO,
    TOKEN_RATIO,
    non_inferior,
)
from .evaluate import (
    QUESTIONS,
    Fights,
    benchmark,
    break_even,
    decision_time,
    decision_times,
    fight,
    multi_call_agent,
    scripted_agent,
    threat,
    vla_agent,
)
from .experiment import (
    ALTERNATIVES,
    ARM_LABELS,
    ARMS,
    FULL_TOKENS,
    METHODS,
    SATURATION_CEILING,
    Config,
    Player,
    Result,
    Splits,
    clear_trained,
    key_accuracy,
    make_splits,
    players,
    run,
    tell_story,
    train_arms,
    with_method,
)
from .figures import (
    break_even_table,
    fig_cost_per_decision,
    fig_latency_boundary,
    fig_story,
    fig_success_vs_cost,
    latency_boundary,
)
from .game import KEY_MEANING, KEYS, KINDS, PHASES, Battle, expert_keys, new_battles, play, render, step
from .model import (
    Stopping,
    TinyVLA,
    decode,
    parse_action,
    parse_thoughts,
    sequence_loss,
    stage_data,
    train_stages,
)
from .results import reference_environment, reference_results, results_from_arrays
from .tracker import ActionTracker, nearest_frame_pairs, session_clocks

__all__ = [
    "ACTION0",
    "ALTERNATIVES",
    "ARMS",
    "ARM_LABELS",
    "BENCH_MARGIN",
    "BOS",
    "CLAIMS",
    "EOS",
    "FALSIFIERS",
    "FORMATS",
    "FULL_TOKENS",
    "KEYS",
    "KEY_MEANING",
    "KINDS",
    "MAX_LEAD",
    "MAX_LEN",
    "METHODS",
    "MULTI_TOKEN_RATIO",
    "PAD",
    "PAUSED_BAND",
    "PHASES",
    "QUESTIONS",
    "REALTIME_MARGIN",
    "SATURATION_CEILING",
    "SLOTS",
    "SLOT_NAMES",
    "TIME_RATIO",
    "TOKENS",
    "TOKEN_RATIO",
    "TRUNC",
    "VID",
    "VOCAB",
    "ActionTracker",
    "Battle",
    "Config",
    "Fights",
    "Player",
    "Recording",
    "Result",
    "Splits",
    "Stopping",
    "TinyVLA",
    "benchmark",
    "break_even",
    "break_even_table",
    "clear_trained",
    "decision_time",
    "decision_times",
    "decode",
    "describe",
    "expert_keys",
    "fig_cost_per_decision",
    "fig_latency_boundary",
    "fig_story",
    "fig_success_vs_cost",
    "fight",
    "key_accuracy",
    "latency_boundary",
    "make_splits",
    "multi_call_agent",
    "nearest_frame_pairs",
    "new_battles",
    "non_inferior",
    "parse_action",
    "parse_thoughts",
    "play",
    "players",
    "record",
    "reference_environment",
    "reference_results",
    "render",
    "results_from_arrays",
    "run",
    "scripted_agent",
    "sequence_loss",
    "sequences",
    "session_clocks",
    "stage_data",
    "step",
    "tell_story",
    "thought_tokens",
    "thought_values",
    "threat",
    "train_arms",
    "train_stages",
    "vla_agent",
    "with_method",
]
