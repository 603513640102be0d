"""stepscope: check that every CUDA/HIP graph replay was recorded, and read LLM-serving
profiles fast, from Python.

    >>> import stepscope
    >>> result = stepscope.analyze("trace.json.gz")
    >>> result.verdict
    'complete'
    >>> result.tables.stages.to_pandas()

The work runs in the same Rust code as the ``stepscope`` command (installed with this
package), in this process, with the GIL released while traces are read.
"""

from ._analysis import Analysis, Diff, Table, Tables
from ._api import StepscopeError, analyze, check_configs, diff, env
from ._stepscope import __version__

__all__ = [
    "Analysis",
    "Diff",
    "StepscopeError",
    "Table",
    "Tables",
    "__version__",
    "analyze",
    "check_configs",
    "diff",
    "env",
]
