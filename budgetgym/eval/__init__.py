"""Evaluation: agents, Pass@(K,T) sweeps, recovery, action-quality and exploit probes, reports.

Importing this package needs only budgetgym's core dependencies; the chat agent, progress bars,
tables and plots need ``budgetgym[eval]`` and the Ray executor ``budgetgym[ray]``, imported on use.

    from budgetgym.eval import make_agent, run_sweep, summarize, write_report
    result = run_sweep("budgetgym/FunctionCalling-v0", make_agent("noisy-oracle"), out="runs/x/episodes.jsonl")
    write_report(summarize(result.records), "runs/x")
"""

from budgetgym.eval.agents import (Agent, AgentError, BudgetAwareAgent, NoisyOracleAgent, OpenAIChatAgent,
                                   OracleAgent, RandomAgent, make_agent)
from budgetgym.eval.metrics import pass_at_k, pass_grid
from budgetgym.eval.probes import run_action_quality_probe, run_exploit_probe, run_recovery_probe
from budgetgym.eval.report import compare, summarize, write_comparison, write_report
from budgetgym.eval.sweep import SweepResult, run_sweep

__all__ = ["Agent", "AgentError", "BudgetAwareAgent", "NoisyOracleAgent", "OpenAIChatAgent", "OracleAgent",
           "RandomAgent", "SweepResult", "compare", "make_agent", "pass_at_k", "pass_grid", "run_action_quality_probe",
           "run_exploit_probe", "run_recovery_probe", "run_sweep", "summarize", "write_comparison", "write_report"]
