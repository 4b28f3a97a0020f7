"""Systems for ML at scale: one module (or subpackage) per paper."""
