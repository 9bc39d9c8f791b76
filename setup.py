"""The package list, found rather than written out: each top-level part is ``groupcoord.<part>``
(the rest of the metadata is in pyproject.toml)."""
from setuptools import find_packages, setup

PARTS = ("protocol", "coordinator", "client", "sim", "analytics", "cli")

setup(packages=["groupcoord." + p for p in find_packages(include=[*PARTS, *(p + ".*" for p in PARTS)])],
      package_dir={"groupcoord." + p: p for p in PARTS})
