"""A gate's text names a failed check once and is cut at a word, never mid-word (issue 30,
item 8: "judge_recall: judge_recall: … accept trigger-phrase suggestion")."""

from hilbench_annotate.toolkit.wording import shorten as _shorten
from validators.services import _failure_line


def test_a_long_message_is_cut_at_a_word_with_an_ellipsis():
    text = "Below 80%: accept trigger-phrase suggestions from the misses and re-validate."
    cut = _shorten(text, 40)
    assert cut.endswith("…") and len(cut) <= 41
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "
    assert _shorten(text, 400) == text


def test_the_check_is_named_only_when_it_is_not_the_group():
    assert _failure_line("judge_recall", "judge_recall", "Judge recall 70%.") == "Judge recall 70%."
    assert _failure_line("spec", "blocker_count", "2 blockers.") == "blocker_count: 2 blockers."
