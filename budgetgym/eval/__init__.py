"""Evaluation: agents, Pass@(K,T) sweeps, recovery and action-quality probes, reports.

Importing this package needs only budgetgym's core dependencies; the chat agent, progress bars,
tables and plots need ``budgetgym[eval]`` and the Ray executor ``budgetgym[ray]``, imported on use.
"""

from budgetgym.eval.agents import (Agent, AgentError, NoisyOracleAgent, OpenAIChatAgent, OracleAgent, RandomAgent,
                                   make_agent)
from budgetgym.eval.metrics import pass_at_k, pass_grid
from budgetgym.eval.sweep import SweepResult, run_sweep

__all__ = ["Agent", "AgentError", "NoisyOracleAgent", "OpenAIChatAgent", "OracleAgent", "RandomAgent", "SweepResult",
           "make_agent", "pass_at_k", "pass_grid", "run_sweep"]
