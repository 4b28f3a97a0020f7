"""The combat game: a duel on a line, played by many games at once in numpy, drawn as tiny images."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The paper's ten keys: move (w/a/s/d), shift, space to dodge, r to heal, 1 to immobilize, light
# and heavy attack. The toy's meaning of each is in `KEY_MEANING`.
KEYS = ("w", "a", "s", "d", "shift", "space", "r", "1", "light", "heavy")
KEY_MEANING = {
    "w": "step toward the enemy",
    "a": "sidestep (this tick): a swordsman's thrust misses (a lancer's follows)",
    "s": "step away from the enemy",
    "d": "sidestep (this tick): a swordsman's thrust misses (a lancer's follows)",
    "shift": "block (this tick): a strike does half its damage",
    "space": "dodge roll (this tick): every strike misses; cooldown",
    "r": "drink a potion: +4 HP",
    "1": "immobilize the enemy for a few ticks (range 3); long cooldown",
    "light": "light attack: 1 damage at distance 1",
    "heavy": "heavy attack: 3 damage at distance 1; cooldown",
}
IDLE = -1  # no key pressed this tick (the player is still thinking)
W, A, S, D, SHIFT, SPACE, R, IMMOBILIZE, LIGHT, HEAVY = range(10)

# Enemy phases, as the frames show them.
PHASES = ("approach", "windup_thrust", "windup_sweep", "recover", "stunned")
APPROACH, WINDUP_THRUST, WINDUP_SWEEP, RECOVER, STUNNED = range(5)
# Enemy kinds, drawn per fight and shown in every frame (the helmet's brightness), but named by
# no explanation slot: a swordsman's thrust misses a sidestep, a lancer's thrust follows it, and a
# duelist (whose thrust misses a sidestep too) winds up one tick faster than the others, so the cue's
# length alone no longer says when a strike lands (the explanation's "when" slot does).
KINDS = ("swordsman", "lancer", "duelist")
SWORDSMAN, LANCER, DUELIST = range(3)
HELMET = (1.0, 0.5, 0.25)  # the helmet's brightness per kind, a share of the body's

ARENA = 12  # cells on the line
MAX_HP, ENEMY_HP, POTIONS = 10, 30, 2
# ticks from the cue to the strike (a duelist's: HASTE fewer); the chapter's first duel had 3 and 4 (and damage
# 4 and 5), where no thought and full AoT won nearly every fight paused once trained to their best point
WINDUP = {WINDUP_THRUST: 2, WINDUP_SWEEP: 3}
HASTE = 1  # ticks a duelist's wind-up is shorter
REACH = {WINDUP_THRUST: 3, WINDUP_SWEEP: 2}  # a strike hits at this distance or closer
DAMAGE = {WINDUP_THRUST: 5, WINDUP_SWEEP: 6}
RECOVER_TICKS, STUN_TICKS = 3, 4
COOLDOWN = {"dodge": 4, "heavy": 4, "immobilize": 16}
HEAL, IMMOBILIZE_RANGE = 4, 3
MAX_TICKS = 60  # a fight not won by then is lost
HEIGHT, WIDTH = 10, 12  # pixels of a frame
FRAME_SIZE = HEIGHT * WIDTH


@dataclass
class Battle:
    """The state of `n` fights at once (every field an array of length n).

    The player stands left of the enemy on a line of `ARENA` cells; the enemy walks up to
    striking distance, winds up (a visible cue that tells thrust from sweep and grows every
    tick), strikes, recovers (takes double damage), and starts again.
    """

    player: np.ndarray  # the player's cell
    enemy: np.ndarray  # the enemy's cell (always right of the player)
    hp: np.ndarray  # the player's HP, 0..MAX_HP
    enemy_hp: np.ndarray
    kind: np.ndarray  # KINDS index: the enemy's kind, fixed for the fight
    potions: np.ndarray
    dodge_cd: np.ndarray  # ticks until the key is ready again (0 = ready)
    heavy_cd: np.ndarray
    immobilize_cd: np.ndarray
    phase: np.ndarray  # PHASES index
    timer: np.ndarray  # ticks spent in the phase (windup) or left in it (recover, stunned)
    tick: np.ndarray
    flash: np.ndarray  # 1 on the frame right after a strike landed (drawn), else 0

    @property
    def n(self) -> int:
        return len(self.hp)

    @property
    def distance(self) -> np.ndarray:
        return self.enemy - self.player

    @property
    def won(self) -> np.ndarray:
        return self.enemy_hp <= 0

    @property
    def done(self) -> np.ndarray:
        """Won, lost (HP gone) or out of time."""
        return self.won | (self.hp <= 0) | (self.tick >= MAX_TICKS)

    @property
    def strike_in(self) -> np.ndarray:
        """Ticks until the winding-up enemy strikes (0: at the end of this tick); -1 when not winding up."""
        return np.where(self.winding, windup_ticks(self.phase, self.kind) - 1 - self.timer, -1)

    @property
    def winding(self) -> np.ndarray:
        return (self.phase == WINDUP_THRUST) | (self.phase == WINDUP_SWEEP)

    def copy(self) -> Battle:
        return Battle(**{k: v.copy() for k, v in self.__dict__.items()})


def windup_ticks(phase: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Ticks from the cue to the strike of each enemy's wind-up (a duelist's are `HASTE` fewer)."""
    windup = np.where(phase == WINDUP_SWEEP, WINDUP[WINDUP_SWEEP], WINDUP[WINDUP_THRUST])
    return windup - np.where(kind == DUELIST, HASTE, 0)


def new_battles(n: int, seed: int) -> Battle:
    """`n` fights from varied starts: distance, HP, potions, cooldowns, enemy HP and kind are drawn."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    rng = np.random.default_rng(seed)
    player = rng.integers(0, 4, n)
    return Battle(
        player=player,
        enemy=player + rng.integers(3, 8, n),
        hp=rng.integers(5, MAX_HP + 1, n),
        enemy_hp=rng.integers(ENEMY_HP - 4, ENEMY_HP + 1, n),
        potions=rng.integers(0, POTIONS + 1, n),
        dodge_cd=rng.integers(0, 3, n),
        heavy_cd=rng.integers(0, 3, n),
        immobilize_cd=rng.integers(0, COOLDOWN["immobilize"], n),
        kind=rng.integers(0, len(KINDS), n),
        phase=np.full(n, APPROACH),
        timer=np.zeros(n, dtype=np.int64),
        tick=np.zeros(n, dtype=np.int64),
        flash=np.zeros(n, dtype=np.int64),
    )


def step(b: Battle, keys: np.ndarray, attacks: np.ndarray) -> Battle:
    """Advance every unfinished fight by one tick: the player's key first, then the enemy.

    keys: one key index per fight (IDLE for none). attacks: the attack each enemy picks if it
    starts a windup this tick (WINDUP_THRUST or WINDUP_SWEEP), drawn by the caller.
    """
    keys = np.asarray(keys)
    if keys.shape != (b.n,) or keys.min(initial=0) < IDLE or keys.max(initial=0) >= len(KEYS):
        raise ValueError(f"keys must hold one key in [-1, {len(KEYS) - 1}] per fight, got {keys!r}")
    b = b.copy()
    live = ~b.done
    k = np.where(live, keys, IDLE)
    vulnerable = (b.phase == RECOVER) | (b.phase == STUNNED)
    near = b.distance <= 1
    # --- the player's key ------------------------------------------------------------------
    b.player = np.where(k == W, np.minimum(b.player + 1, b.enemy - 1), b.player)
    b.player = np.where(k == S, np.maximum(b.player - 1, 0), b.player)
    sidestep = (k == A) | (k == D)
    block = k == SHIFT
    dodge = (k == SPACE) & (b.dodge_cd == 0)
    b.dodge_cd = np.where(dodge, COOLDOWN["dodge"] + 1, b.dodge_cd)
    heal = (k == R) & (b.potions > 0)
    b.hp = np.where(heal, np.minimum(b.hp + HEAL, MAX_HP), b.hp)
    b.potions = b.potions - heal
    stun = (k == IMMOBILIZE) & (b.immobilize_cd == 0) & (b.distance <= IMMOBILIZE_RANGE)
    b.immobilize_cd = np.where(k == IMMOBILIZE, np.maximum(b.immobilize_cd, 1), b.immobilize_cd)
    b.immobilize_cd = np.where(stun, COOLDOWN["immobilize"] + 1, b.immobilize_cd)
    heavy = (k == HEAVY) & (b.heavy_cd == 0) & near
    b.heavy_cd = np.where(k == HEAVY, np.maximum(b.heavy_cd, 1), b.heavy_cd)
    b.heavy_cd = np.where(heavy, COOLDOWN["heavy"] + 1, b.heavy_cd)
    # damage = base · (2 if the enemy recovers or is immobilized, else 1)
    damage = np.where(heavy, 3, np.where((k == LIGHT) & near, 1, 0)) * np.where(vulnerable, 2, 1)
    b.enemy_hp = b.enemy_hp - damage
    # --- the enemy ---------------------------------------------------------------------------
    b.flash = np.zeros_like(b.flash)
    alive = live & (b.enemy_hp > 0)
    stunned_now = alive & stun
    b.phase = np.where(stunned_now, STUNNED, b.phase)
    b.timer = np.where(stunned_now, STUN_TICKS + 1, b.timer)
    winding = alive & b.winding
    b.timer = np.where(winding, b.timer + 1, b.timer)
    strike = winding & (b.timer >= windup_ticks(b.phase, b.kind))
    reach = np.where(b.phase == WINDUP_SWEEP, REACH[WINDUP_SWEEP], REACH[WINDUP_THRUST])
    # a dodge beats every strike; a sidestep beats a swordsman's or a duelist's thrust only
    missed = dodge | (sidestep & (b.phase == WINDUP_THRUST) & (b.kind != LANCER))
    hit = strike & (b.distance <= reach) & ~missed
    base = np.where(b.phase == WINDUP_SWEEP, DAMAGE[WINDUP_SWEEP], DAMAGE[WINDUP_THRUST])
    # a block halves the strike (rounded down)
    b.hp = b.hp - np.where(hit, np.where(block, base // 2, base), 0)
    b.flash = hit.astype(np.int64)
    b.phase = np.where(strike, RECOVER, b.phase)
    b.timer = np.where(strike, RECOVER_TICKS + 1, b.timer)
    waiting = alive & ((b.phase == RECOVER) | (b.phase == STUNNED))
    b.timer = np.where(waiting, b.timer - 1, b.timer)
    rested = waiting & (b.timer <= 0)
    b.phase = np.where(rested, APPROACH, b.phase)
    b.timer = np.where(rested, 0, b.timer)
    approach = alive & (b.phase == APPROACH) & ~rested
    start = approach & (b.distance <= REACH[WINDUP_SWEEP])
    b.phase = np.where(start, attacks, b.phase)
    b.timer = np.where(start, 0, b.timer)
    b.enemy = np.where(approach & ~start, b.enemy - 1, b.enemy)
    for name in ("dodge_cd", "heavy_cd", "immobilize_cd"):
        value = getattr(b, name)
        setattr(b, name, np.where(live, np.maximum(value - 1, 0), value))
    b.tick = np.where(live, b.tick + 1, b.tick)
    return b


def draw_attacks(rng: np.random.Generator, n: int) -> np.ndarray:
    """The attack each enemy would start this tick: thrust or sweep, evenly."""
    return np.where(rng.random(n) < 0.5, WINDUP_THRUST, WINDUP_SWEEP)


def render(b: Battle) -> np.ndarray:
    """Draw every fight as a HEIGHT × WIDTH grey frame, (n, HEIGHT, WIDTH) in [0, 1].

    Rows 0–5 are the HUD: the player's HP bar, the enemy's HP bar, potion pips, and the dodge,
    heavy and immobilize cooldown bars (lit while cooling down). Rows 6–9 are the arena: the
    player (grey), the enemy (white; dim while it recovers, striped when immobilized; its helmet,
    row 7, at `HELMET`'s share of the body's brightness: full for a swordsman, half for a lancer, a
    quarter for a duelist), and the windup cue in row 6: a bar that grows by
    one pixel a tick from the enemy toward the player, bright for a sweep and half-bright for a
    thrust. A strike that landed flashes the player's cells.
    """
    n = b.n
    frame = np.zeros((n, HEIGHT, WIDTH))
    cols = np.arange(WIDTH)[None, :]
    frame[:, 0] = cols < b.hp[:, None]
    frame[:, 1] = cols < np.ceil(np.maximum(b.enemy_hp, 0) * WIDTH / ENEMY_HP)[:, None]
    # each potion is a 3-pixel pip: potion i fills columns 4i..4i+2
    frame[:, 2] = (cols % 4 < 3) & (cols // 4 < b.potions[:, None])
    frame[:, 3] = cols < b.dodge_cd[:, None]
    frame[:, 4] = cols < b.heavy_cd[:, None]
    frame[:, 5] = cols < np.ceil(b.immobilize_cd / 2)[:, None]
    rows = np.arange(n)
    body = np.select([b.phase == RECOVER, b.phase == STUNNED], [0.35, 0.7], default=1.0)
    for r in (7, 8, 9):
        helmet = np.where(r == 7, np.asarray(HELMET)[b.kind], 1.0)
        frame[rows, r, np.clip(b.enemy, 0, WIDTH - 1)] = body * helmet
        frame[rows, r, b.player] = np.where(b.flash == 1, 1.0, 0.5)
    frame[rows[b.phase == STUNNED], 8, np.clip(b.enemy, 0, WIDTH - 1)[b.phase == STUNNED]] = 0.0
    winding = b.winding
    cue = np.where(b.phase == WINDUP_SWEEP, 1.0, 0.5)
    length = b.timer + 1
    lit = winding[:, None] & (cols <= b.enemy[:, None]) & (cols > (b.enemy - length)[:, None])
    frame[:, 6] = np.where(lit, cue[:, None], 0.0)
    return frame


def expert_keys(b: Battle) -> np.ndarray:
    """The scripted expert: the reference player of the chapter (the paper compares with humans).

    In order of priority: avoid a strike that lands this tick and would hit (sidestep a
    swordsman's or a duelist's thrust; dodge a lancer's thrust or any sweep, or block it when the dodge cools
    down); immobilize a sweep being wound up; drink at 4 HP or less; close in; at distance 1
    strike, heavy when ready. The enemy's kind is in the frames but in no explanation slot, so
    the key is not a function of the explanation alone.
    """
    dist = b.distance
    reach = np.where(b.phase == WINDUP_SWEEP, REACH[WINDUP_SWEEP], REACH[WINDUP_THRUST])
    threat = (b.strike_in == 0) & (dist <= reach)
    keys = np.where(b.heavy_cd == 0, HEAVY, LIGHT)
    keys = np.where(dist > 1, W, keys)
    keys = np.where((b.hp <= 4) & (b.potions > 0), R, keys)
    sweep_starts = (b.phase == WINDUP_SWEEP) & (b.strike_in > 0) & (b.immobilize_cd == 0)
    keys = np.where(sweep_starts & (dist <= IMMOBILIZE_RANGE), IMMOBILIZE, keys)
    sidestep = (b.phase == WINDUP_THRUST) & (b.kind != LANCER)
    avoid = np.where(sidestep, A, np.where(b.dodge_cd == 0, SPACE, SHIFT))
    return np.where(threat, avoid, keys)


def random_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """A player without understanding: a uniformly random key every tick."""
    return rng.integers(0, len(KEYS), n)


def play(policy: str, n: int, seed: int) -> Battle:
    """Play `n` fights to the end with the 'expert' or the 'random' player (no latency)."""
    if policy not in ("expert", "random"):
        raise ValueError(f"policy must be 'expert' or 'random', got {policy!r}")
    b = new_battles(n, seed)
    rng = np.random.default_rng(seed + 1)
    while not b.done.all():
        keys = expert_keys(b) if policy == "expert" else random_keys(rng, n)
        b = step(b, keys, draw_attacks(rng, n))
    return b
