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
# makes, the toy's numbers and the verdict. Each chapter's name links to its own
# "Does the claim hold?" section. Only one kind of claim counts as a reproduction:
#
# effect
# : the paper's method beats the strongest fair alternative, on data and seeds it was not
#   tuned on, by more than a {term}`margin` set on {term}`calibration seeds` before the
#   book's seeds were looked at.
#
# control
# : a setting where the paper's mechanism has nothing to act on, so the effect must vanish.
#   It validates an effect; it is not one.
#
# mechanism
# : a property that holds by design, such as a token count or a bit-identical output.
#
# modelled
# : a number from an analytic or cost model with assumed constants.
#
# Each claim's verdict is one of the words below; the same words, defined the same way, sit
# under every chapter's claims table. Only *reproduced* is counted as a reproduction in the
# table of counts. A claim the chapter declared not expected (it misses its margin on the
# {term}`calibration seeds`, or it survives a {term}`falsifier`) is *not reproduced* even
# when it clears its margin on the book's seeds, and then reads *not reproduced (margin
# cleared)*.

# %%
from toyscale import scorecard

scorecard.status_table()

# %% [markdown]
# **Where the numbers come from.** Nothing on this page is typed. It is rendered from a
# ledger, `book/scorecard.json`, that `python -m toyscale reproduce --all --ledger
# book/scorecard.json` writes: every chapter's claims checked on the book's five seeds at its
# default configuration. A test compares the ledger with the code on every run of the test
# suite and fails when a claim has been added, removed, re-worded or re-kinded, or a
# chapter's code has changed, since its entry was computed; another checks that the counts
# below agree with the verdicts in the tables. The chapters' own tables are computed when
# the book is built.

# %%
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
# Each chapter's entry records the environment it ran in: the git commit (*+dirty* when the
# working tree had uncommitted changes), the Python, PyTorch and NumPy versions, the CPU, its
# cores, the threads torch used and the device. The last column is the wall time of the
# chapter's `reproduce` run that wrote the entry: every book seed trained from scratch at the
# default configuration. That is much longer than a chapter's notebook takes when the book is
# built, because a notebook loads committed results and recomputes only a part of them live,
# as each chapter says ({doc}`execution` gives those times). Most claims compare arms trained on the same machine,
# so another machine moves the numbers a little, not the verdicts; the speed claims are ratios
# measured within one run for the same reason.

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
