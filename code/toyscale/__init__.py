"""toyscale: industrial ML papers reproduced at toy scale."""
