"""Recommendation and advertising: a shared synthetic ad world (`world`) and one module per paper."""
