"""The default review pipeline: the layers a project starts with (leads edit them).

A layer's ``gates`` name automated checks from ``hilbench_annotate.gates``.
"""

from hilbench_annotate.vocabulary import QUALITY_CRITERIA, Role

DEFAULT_LAYERS = [
    {
        "name": "Author self-check",
        "role": Role.AUTHOR,
        "self_check": True,
        "checklist": [label for _, label in QUALITY_CRITERIA],
        "gates": ["lint_clean"],
    },
    {
        "name": "Peer review",
        "role": Role.AUTHOR,
        "self_check": False,
        "checklist": [
            "Each blocker is a gap a real user or codebase would have",
            "Without each resolution the task fails (tests / gold result depend on it)",
            "The blocked specification still reads naturally",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Registry audit",
        "role": Role.AUDITOR,
        "self_check": False,
        "checklist": [
            "Every resolution is exact and usable verbatim",
            "Trigger questions are self-contained, one topic, and do not contain the answer",
            "Blockers are independent: one targeted question resolves each",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Environment audit",
        "role": Role.AUDITOR,
        "self_check": False,
        "checklist": [
            "Setup patch / database edits plant the blockers and nothing else",
            "Blockers surface while working (progressive discovery)",
            "Nothing in repository, database, descriptions or business info resolves a blocker",
            "A verifier of the folder's own (tests/, on the task page) was read against the "
            "generated one: accepted, or left to the generated one",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Judge-validation labelling",
        "role": Role.REVIEWER,
        "self_check": False,
        "checklist": [
            "Held-out questions labelled independently by two labellers",
            "Disagreements adjudicated by a third",
        ],
        "gates": ["judge_labelling"],
    },
    {
        "name": "Final sign-off",
        "role": Role.LEAD,
        "self_check": False,
        "checklist": [
            "All automated gates are green on the current revision",
            "Every layer was done by a different person",
            "Ready to export",
        ],
        "gates": ["lint_clean", "structural", "judge_recall", "pass_rate"],
    },
]
