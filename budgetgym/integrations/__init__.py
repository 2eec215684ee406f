"""budgetgym in trainers' loops: adapters, the chat episode under them, and dataset export.

* :mod:`budgetgym.integrations.skyrl`: a SkyRL-Gym env (``env_class="budgetgym"``).
* :mod:`budgetgym.integrations.verifiers`: a verifiers taskset and env (taskset id
  ``budgetgym-verifiers``).
* :mod:`budgetgym.integrations.gem`: a GEM env under every budgetgym id.
* :mod:`budgetgym.integrations.export`: tasks as dataset rows (``budgetgym export``).
* :mod:`budgetgym.integrations.episode`: :class:`ChatEpisode` (an env with its budget, in chat
  messages) and :class:`OracleChatPolicy` (the oracle as a chat "model", for tests).

Each adapter exposes the tools (in the system prompt), the budget (a cap and its reveal mode, or a
``BudgetMix`` cap drawn per episode) and the env's reward, built on :mod:`budgetgym.chat`. The
adapters import their package on first use; without it they raise ``ImportError`` naming the extra
(``pip install 'budgetgym[integrations]'``), tested against skyrl-gym 0.4.0, verifiers 0.4.0 and
gem-llm 0.1.0. See ``docs/training.md``.
"""

from budgetgym.integrations.episode import BudgetSpec, ChatEpisode, ChatStep, OracleChatPolicy

__all__ = ["BudgetSpec", "ChatEpisode", "ChatStep", "OracleChatPolicy"]
