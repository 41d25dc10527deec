"""Data shapes shared by every layer (the bottom of the layer order in docs/architecture.md's Layout section).

- ``artifact``: ``Artifact`` and ``Language``, the files an agent hands over;
- ``task``: ``Task`` and its parts, what an agent is asked to model;
- ``check``: ``CheckResult`` and ``Diagnostic``, what a language tool says about an artifact;
- ``scorecard``: ``StageResult`` and ``ScoreCard``, the graded outcome of an artifact;
- ``attempt``: ``Round`` and ``Attempt``, everything one sample did;
- ``events``: an attempt's typed event stream.

Modules here are pure data (pydantic models, enums) and import nothing from other sysmo packages.
"""
