"""corun: plan, predict and run DLRM training co-running with GPU input preprocessing.

Installed, `corun.spec`, `corun.sim`, `corun.costmodel`, `corun.planner`, `corun.backend`
and `corun.reports` are the checkout's top-level folders of those names (pyproject's
package-dir). A checkout put on PYTHONPATH without installing it (as on a GPU machine
with no package index) finds them the same way: beside this package.
"""

from pathlib import Path as _Path

_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "spec" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 - a package's own __path__
