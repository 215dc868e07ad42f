"""The ask-human sidecar carries every module its judge imports: its folder alone, on a
Python with only the judge's packages (no app on the path), judges a question. A module the
judge starts to import without being shipped (hilbench_annotate/task_text.py, issue 43) made
the sidecar exit at start in every ask_human trial; this finds it without Docker."""

import subprocess
import sys

from exchange.bundles.sidecars import ask_human_common

PROBE = """
import sys
sys.path[:0] = ["."]
# The app is installed editable here: its finder would serve any module the folder lacks.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
from judge.base import RegistryBlocker
from judge.embedded import EmbeddedJudge
import judge, hilbench_annotate
assert judge.__file__.startswith(sys.argv[1]) and hilbench_annotate.__file__.startswith(sys.argv[1])
blocker = RegistryBlocker("review_year", "The review year is not given.",
                          ("Which year is the review year?",), "2023")
verdict = EmbeddedJudge().judge("Which calendar year counts as the review year?", [blocker],
                                domain="sql", context="List the loans of the review year.")
print(verdict.blocker_id)
"""


def test_the_ask_human_sidecar_folder_judges_with_nothing_of_the_app(tmp_path):
    for name, content in ask_human_common().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "review_year"
