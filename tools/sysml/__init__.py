"""SysML v2 tools: OpenSysML validation and element-tree export."""
