"""The repository root is the ``sysmo`` package: prefix every discovered subpackage."""
from setuptools import find_packages, setup

setup(packages=["sysmo"] + [f"sysmo.{p}" for p in find_packages(exclude=["tests*", "venv*", ".*"])])
