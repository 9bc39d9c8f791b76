"""The package list, found rather than written out: each top-level part is ``groupcoord.<part>``
(the rest of the metadata is in pyproject.toml).

Every folder of a part is listed, those without modules too: ``coordinator/admin/web`` (the web page's
files, package data in pyproject.toml) is the namespace package ``groupcoord.coordinator.admin.web``.
Python can import such a folder, so setuptools warns about any that the list leaves out."""
import warnings

from setuptools import find_namespace_packages, setup

PARTS = ("protocol", "coordinator", "client", "sim", "analytics", "cli")

FOUND = find_namespace_packages(include=[*PARTS, *(p + ".*" for p in PARTS)],
                                exclude=["*.__pycache__", "*.__pycache__.*"])

# `pip install -e .` (`make run`): the parts become groupcoord.<part> through setuptools' import hook,
# after which setuptools always prints an "Editable installation." notice, boxed as a warning, about
# folders of the working directory named like the package taking precedence. None is (the folders are
# the parts, imported as groupcoord.<part> only), and the box made a good first install look failed.
warnings.filterwarnings("ignore", message=r"Editable installation\.", category=UserWarning,
                        module=r"setuptools\.command\.editable_wheel")

setup(packages=["groupcoord." + p for p in FOUND],
      package_dir={"groupcoord." + p: p for p in PARTS})
