# ---
# jupyter:
#   course:
#     minutes:
#       ci: 1
#       laptop: 1
#   jupytext:
#     notebook_metadata_filter: course,kernelspec,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Pipeline smoke test (not part of the course)
# Imports torch, JAX and TensorFlow in one kernel and checks one computed value from each, so that the
# notebook pipeline (jupytext pair, nbval, sanitising, budgets) is proven end to end.

# %%
import course_utils as cu

cu.env.quiet_tensorflow()
cu.env.fail_on_deprecations()

# %%
# NBVAL_CHECK_OUTPUT
import jax.numpy as jnp
import torch

tf = cu.env.import_tensorflow()
print("torch", torch.arange(5.0).pow(2).sum().item())
print("jax", float(jnp.arange(5.0) @ jnp.arange(5.0)))
print("tensorflow", float(tf.reduce_sum(tf.range(5.0) ** 2)))

# %%
# A timing is shown, not checked: the sanitize file maps it to <TIME> should it ever be checked.
print(cu.timing.benchmark(torch.sin, torch.ones(100), min_time=0.05).summary())
