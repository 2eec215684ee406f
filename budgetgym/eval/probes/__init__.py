"""Probes that look past the success rate: recovery from curated mistakes, the quality of an
agent's next action at matched states, and whether cheap tricks (exploit agents) collect the reward."""

from budgetgym.eval.probes.action_quality import oracle_path_states, run_action_quality_probe
from budgetgym.eval.probes.exploits import format_exploit_table, run_exploit_probe
from budgetgym.eval.probes.recovery import matched_clean_snapshot, run_recovery_probe

__all__ = ["format_exploit_table", "matched_clean_snapshot", "oracle_path_states", "run_action_quality_probe",
           "run_exploit_probe", "run_recovery_probe"]
