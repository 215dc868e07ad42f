"""The benchmark's own vocabulary, as the public HiL-Bench release spells it.

Data only (no models, no queries): models, forms, importers and lint all read it from here.
"""

from django.db.models import TextChoices


class Domain(TextChoices):
    SWE = "swe", "SWE"
    SQL = "sql", "Text-to-SQL"


class Role(TextChoices):
    AUTHOR = "author", "Author (domain expert)"
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"
    LEAD = "lead", "Lead"
    # A machine user (evaluation harness): calls ask_human, never reads ground truth.
    HARNESS = "harness", "Evaluation harness"


# Roles that may read a project's tasks. The harness calls ask_human only and reads no task.
READER_ROLES = (Role.AUTHOR, Role.REVIEWER, Role.AUDITOR, Role.LEAD)


class TaskStatus(TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved", "Approved (validated)"
    REJECTED = "rejected", "Rejected"
    EXPORTED = "exported", "Exported"


class TaskSource(TextChoices):
    BIRD = "bird", "BIRD"
    SWEBENCH = "swebench", "SWE-bench"
    HILBENCH = "hilbench", "HiL-Bench release"
    MANUAL = "manual", "Created in the app"


class BlockerType(TextChoices):
    # SWE types name the kind of gap.
    MISSING_PARAMETERS = "missing parameters", "Missing parameters"
    AMBIGUOUS_REQUIREMENTS = "ambiguous requirements", "Ambiguous requirements"
    CONTRADICTORY_REQUIREMENTS = "contradictory requirements", "Contradictory requirements"
    # SQL types name where the gap lives.
    QUESTION = "question", "Question"
    BUSINESS_INFO = "business info", "Business info"
    SCHEMA = "schema", "Schema"


SWE_BLOCKER_TYPES = (
    BlockerType.MISSING_PARAMETERS,
    BlockerType.AMBIGUOUS_REQUIREMENTS,
    BlockerType.CONTRADICTORY_REQUIREMENTS,
)

SQL_SUBTYPES: dict[str, tuple[str, ...]] = {
    BlockerType.QUESTION: (
        "underspecified_concepts",
        "timeframe_ambiguity",
        "unclear_value",
        "multiple_interpretations",
        "requires_real_time_information",
        "contradicts_real_life",
        "contradicting_requirements",
    ),
    BlockerType.BUSINESS_INFO: ("missing_information", "confusing_information"),
    BlockerType.SCHEMA: (
        "confusing_table_or_table_definition",
        "confusing_column_or_column_definition",
    ),
}
SQL_BLOCKER_TYPES = tuple(SQL_SUBTYPES)
ALL_SUBTYPES = tuple(s for subtypes in SQL_SUBTYPES.values() for s in subtypes)
# The SQL type each subtype belongs to (a subtype is valid under that type only).
SUBTYPE_TYPE: dict[str, str] = {s: str(t) for t, subtypes in SQL_SUBTYPES.items() for s in subtypes}


class GapKind(TextChoices):
    """The paper's three kinds of blocker (and the README's): what is wrong with the
    information, whichever type says where the gap lives."""

    MISSING = "missing", "missing information"
    AMBIGUOUS = "ambiguous", "ambiguous request"
    CONTRADICTORY = "contradictory", "contradictory information"


# Each SWE type and SQL subtype is one kind. The SWE types name it; of the SQL subtypes,
# those about one reading of several (a vague concept, a timeframe, a value, readings, a
# confusing definition) are ambiguous, those the environment lacks (real-time facts, business
# information) missing, and those that contradict (reality, the other requirements)
# contradictory.
GAP_KIND: dict[str, str] = {
    BlockerType.MISSING_PARAMETERS: GapKind.MISSING,
    BlockerType.AMBIGUOUS_REQUIREMENTS: GapKind.AMBIGUOUS,
    BlockerType.CONTRADICTORY_REQUIREMENTS: GapKind.CONTRADICTORY,
    "underspecified_concepts": GapKind.AMBIGUOUS,
    "timeframe_ambiguity": GapKind.AMBIGUOUS,
    "unclear_value": GapKind.AMBIGUOUS,
    "multiple_interpretations": GapKind.AMBIGUOUS,
    "requires_real_time_information": GapKind.MISSING,
    "contradicts_real_life": GapKind.CONTRADICTORY,
    "contradicting_requirements": GapKind.CONTRADICTORY,
    "missing_information": GapKind.MISSING,
    "confusing_information": GapKind.AMBIGUOUS,
    "confusing_table_or_table_definition": GapKind.AMBIGUOUS,
    "confusing_column_or_column_definition": GapKind.AMBIGUOUS,
}


def gap_kinds(name: str) -> tuple[str, ...]:
    """The kinds a type or subtype is, in the paper's order: one for a SWE type or a
    subtype; for a SQL type, those of its subtypes (it says where the gap lives, not what)."""
    kinds = {GAP_KIND[s] for s in SQL_SUBTYPES[name]} if name in SQL_SUBTYPES else set()
    if name in GAP_KIND:
        kinds.add(GAP_KIND[name])
    return tuple(kind for kind in GapKind.values if kind in kinds)


def blocker_types_for(domain: str) -> tuple[str, ...]:
    return tuple(SWE_BLOCKER_TYPES if domain == Domain.SWE else SQL_BLOCKER_TYPES)


class Surface(TextChoices):
    """Where an agent runs into the gap while working (progressive discovery)."""

    SPECIFICATION = "specification", "Specification"
    REPOSITORY = "repository", "Repository code"
    TESTS = "tests", "Tests / test run"
    SCHEMA = "schema", "Database schema"
    DATA = "data", "Database rows"
    DESCRIPTIONS = "descriptions", "Column descriptions"
    BUSINESS_INFO = "business_info", "Business info"


# The seven blocker quality criteria (PRODUCT.md); each is attested with a one-line note.
QUALITY_CRITERIA: tuple[tuple[str, str], ...] = (
    ("realistic", "Realistic — a gap a real user or codebase would have"),
    ("critical", "Critical — without the resolution the task fails"),
    ("vast_search_space", "Vast search space — cannot be guessed or enumerated"),
    ("not_inferable", "Not inferable — nothing in the environment resolves it"),
    ("exact_resolution", "Exact resolution — one concrete answer, usable verbatim"),
    ("progressive", "Progressively discovered — surfaces while working"),
    ("independent", "Independent — one targeted question resolves it"),
)
QUALITY_CRITERIA_KEYS = tuple(key for key, _ in QUALITY_CRITERIA)

MIN_BLOCKERS, MAX_BLOCKERS = 3, 5
MIN_TRIGGER_QUESTIONS, MAX_TRIGGER_QUESTIONS = 3, 5
