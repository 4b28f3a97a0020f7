# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Scorecard
#
# Every claim of every chapter on one page: what the paper says, what kind of check the toy
# makes, the toy's numbers and the verdict. Only one kind counts as a reproduction:
#
# effect
# : the paper's method beats the strongest fair alternative, on data and seeds it was not
#   tuned on, by more than a margin set on calibration seeds before the book's seeds were
#   looked at. A *pass* is a reproduction; *not reproduced* means a fair comparison did not
#   show the effect, for the reason the chapter gives.
#
# control
# : a setting where the paper's mechanism has nothing to act on, so the effect must vanish.
#   It validates an effect; it is not one.
#
# mechanism
# : a property that holds by design, such as a token count or a bit-identical output: marked
#   *by construction*.
#
# modelled
# : a number from an analytic or cost model with assumed constants.
#
# A claim that needs what no toy has, such as an online A/B test with real users, is listed
# as *not measurable here*.
#
# **Where the numbers come from.** Nothing on this page is typed. It is rendered from a
# ledger, `book/scorecard.json`, that `python -m toyscale reproduce --all --ledger
# book/scorecard.json` writes: every chapter's claims checked on the book's five seeds at its
# default configuration. A test compares the ledger with the code on every run of the test
# suite and fails when a claim has been added, removed, re-worded or re-kinded, or a
# chapter's code has changed, since its entry was computed. The chapters' own tables are
# computed when the book is built.

# %%
from toyscale import scorecard

ledger = scorecard.load()
stale = scorecard.problems(ledger)
assert not stale, "the ledger is out of date:\n" + "\n".join(stale)
scorecard.counts_table(ledger)

# %% [markdown]
# ## Recommendation and advertising

# %%
scorecard.claims_table(ledger, "recsys")

# %% [markdown]
# ## Compressing and training language models

# %%
scorecard.claims_table(ledger, "llm")

# %% [markdown]
# ## Generative and multimodal models

# %%
scorecard.claims_table(ledger, "genmm")

# %% [markdown]
# ## Systems for ML at scale

# %%
scorecard.claims_table(ledger, "systems")

# %% [markdown]
# ## The machine behind the numbers
#
# Each chapter's entry records the environment it ran in: the package version and git commit,
# Python, PyTorch and NumPy versions, the CPU, its cores, the threads torch used and the device.
# Most claims compare arms trained on the same machine, so another machine moves the numbers a
# little, not the verdicts; the speed claims are ratios measured within one run for the same
# reason.

# %%
scorecard.environment_table(ledger)

# %% [markdown]
# ## Check it on your machine
#
# Run a chapter's claims yourself, on the book's seeds or on seeds of your own choosing, and
# set your run beside the book's:
#
# ```bash
# python -m toyscale reproduce jrc --json mine.json                     # seeds 0–4, as here
# python -m toyscale reproduce jrc --seed-start 500 --seeds 5 --json mine.json   # seeds nobody tuned on
# python -m toyscale scorecard --compare mine.json                      # yours beside the book's
# ```
#
# A claim that holds only on the book's seeds is not a claim: the margins were set on seeds
# 1000 and up, and every chapter was confirmed on a start of seeds no code or test had used.
# If a verdict differs on your machine or your seeds, that is worth an issue.
