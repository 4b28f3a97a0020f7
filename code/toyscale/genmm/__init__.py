"""Generative and multimodal models: BADiff, Victor, CombatVLA, and the digits images they share."""
