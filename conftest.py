"""The notebooks' nbval pass runs on a simulated foreign CPU (README, "Any machine").

Committed results were made on one CPU; a reader's differs. So that a notebook that only works on
the CPU that made its files fails here, every notebook executed by nbval runs in a perturbed
numerical environment (`toyscale.core.environment.PERTURBED_NUMERICS`, `aten-default` unless
`TOYSCALE_NBVAL_NUMERICS` names another, or `native`), while the book build and every other test
keep the environment the shell gave. A shell that already sets a numerics variable is left alone:
then everything runs in its environment.
"""

from __future__ import annotations

import os

import pytest

from toyscale.core.environment import NUMERICS_VARIABLES, PERTURBED_NUMERICS

_SHELL = {name: os.environ.get(name) for name in NUMERICS_VARIABLES}


def _nbval_numerics() -> dict[str, str]:
    if any(_SHELL.values()):
        return {}
    choice = os.environ.get("TOYSCALE_NBVAL_NUMERICS", "aten-default")
    if choice == "native":
        return {}
    if choice not in PERTURBED_NUMERICS:
        raise pytest.UsageError(
            f"TOYSCALE_NBVAL_NUMERICS={choice!r}: use native or one of {', '.join(PERTURBED_NUMERICS)}"
        )
    return PERTURBED_NUMERICS[choice]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a notebook's kernel starts, perturb the numerics it inherits; before any other test, restore them."""
    for name, value in _SHELL.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if type(item).__module__.startswith("nbval"):
        os.environ.update(_nbval_numerics())
