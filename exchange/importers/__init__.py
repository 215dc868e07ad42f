"""Importers of base tasks and released benchmarks.

Each importer validates every record first (streaming the file, never reading it whole)
and writes nothing unless all records are valid; then it writes in one transaction.
Re-importing a record that is already there changes nothing.
"""

from .bird import import_bird
from .common import ImportReport
from .hilbench import import_hilbench
from .swebench import import_swebench

__all__ = ["ImportReport", "import_bird", "import_hilbench", "import_swebench"]
