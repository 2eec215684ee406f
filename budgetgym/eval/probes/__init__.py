"""Probes that look past the success rate: recovery from curated mistakes, the quality of an
agent's next action at matched states, whether cheap tricks (exploit agents) collect the reward, and
what an agent does with a budget it is told of."""

from budgetgym.eval.probes.budget_awareness import format_awareness_table, run_budget_awareness_probe
from budgetgym.eval.probes.action_quality import oracle_path_states, run_action_quality_probe
from budgetgym.eval.probes.exploits import format_exploit_table, run_exploit_probe
from budgetgym.eval.probes.recovery import matched_clean_snapshot, run_recovery_probe

__all__ = ["format_awareness_table", "format_exploit_table", "matched_clean_snapshot", "oracle_path_states", "run_action_quality_probe",
           "run_budget_awareness_probe", "run_exploit_probe", "run_recovery_probe"]
