"""Compressing and training language models: the GLVQ, DDK and D-CPT chapters and the pieces they share."""
