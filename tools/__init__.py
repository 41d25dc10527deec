"""Language tools (SANY, TLC, PlantUML, OpenSysML); each returns ``sysmo.contracts.check.CheckResult``."""
