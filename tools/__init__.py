"""Language tools (SANY, TLC, PlantUML, OpenSysML) behind one result type."""

from sysmo.tools.result import CheckResult, Diagnostic, Outcome, Severity

__all__ = ["CheckResult", "Diagnostic", "Outcome", "Severity"]
