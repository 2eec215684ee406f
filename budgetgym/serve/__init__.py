"""Envs as a service: every registered id over OpenEnv's protocol, a Gymnasium client, a Ray pool.

* :mod:`budgetgym.serve.server`: ``budgetgym serve ID`` (needs the ``serve`` extra: openenv-core,
  FastAPI, uvicorn);
* :mod:`budgetgym.serve.client`: ``budgetgym/Remote-v0``, a Gymnasium env whose episodes run on a
  server (needs only ``websockets``);
* :mod:`budgetgym.serve.ray_pool`: :class:`~budgetgym.serve.ray_pool.EnvPool`, envs in Ray actors
  stepped in batches for trainer rollouts (needs the ``ray`` extra);
* :mod:`budgetgym.serve.protocol`: what travels between them.

docs/serving.md has the commands, the multi-machine start and the figures.
"""
