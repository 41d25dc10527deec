"""SysML v2 tools: OpenSysML validation (``validate``, ``validate_folder``) and element-tree export (``element_tree``).

>>> from sysmo.tools.sysml import validate
>>> validate("package P { part def A; }").outcome
<Outcome.OK: 'ok'>
"""

from sysmo.tools.sysml.diagnostics import TYPING_CODES, split_hint
from sysmo.tools.sysml.element_tree import Element, ElementKind, ElementTree, element_tree
from sysmo.tools.sysml.validate import failing_files, self_check, validate, validate_folder

__all__ = [
    "TYPING_CODES", "Element", "ElementKind", "ElementTree", "element_tree", "failing_files", "self_check",
    "split_hint", "validate", "validate_folder",
]
