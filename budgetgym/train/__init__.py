"""A reference learner for the study in miniature: a small policy that acts through the same text
interface as an LLM agent, and a group-relative policy-gradient trainer for it. Not the product:
a way to see, on a laptop, what training under a turn budget changes in an agent.

* :class:`~budgetgym.train.policy.LinearSoftmaxPolicy`: a softmax over candidate actions (the env's
  admissible commands, or the oracle's action among the family's proposed mistakes) with learned
  weights on hashed features of the observation, the candidate and the budget it was told.
* :func:`~budgetgym.train.grpo.train`: K attempts of a task per group, advantages against the group
  mean, the env's own reward, in two regimes that differ only in the cap (``full`` and ``mix``).
* :func:`~budgetgym.train.study.run_study`: base -> full and base -> BudgetMix, then the Pass@(K,T)
  grids, the action-quality and recovery probes, and a report on the four claims.
"""

from budgetgym.train.policy import LinearSoftmaxPolicy

__all__ = ["LinearSoftmaxPolicy"]
