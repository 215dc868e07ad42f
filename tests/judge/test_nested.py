"""judge.nested: every number of the judge measured on a group is chosen without that group
(issue 43: "every choice made inside the training folds only")."""

import pytest

from judge import nested
from judge.training import Featurizer

from .test_training import TASKS, _embed


@pytest.mark.slow
def test_the_setting_and_the_weights_of_each_outer_fold_never_see_its_group(monkeypatch):
    seen: list[tuple[str, set[str]]] = []
    choose, train = nested.choose_setting, nested.train

    def choose_spy(tasks, featurizer, **kwargs):
        seen.append(("setting", {t.group for t in tasks}))
        return choose(tasks, featurizer, **kwargs)

    def train_spy(tasks, featurizer, **kwargs):
        seen.append(("weights", {t.group for t in tasks}))
        return train(tasks, featurizer, **kwargs)

    monkeypatch.setattr(nested, "choose_setting", choose_spy)
    monkeypatch.setattr(nested, "train", train_spy)
    lines: list[str] = []
    result = nested.cross_validate_nested(TASKS, Featurizer(_embed), report=lines.append)

    groups = {t.group for t in TASKS}
    assert set(result["groups"]) == groups and len(lines) == len(groups)
    # One setting choice and one fit per outer fold, each on every group but the one judged.
    assert len(seen) == 2 * len(groups)
    left_out = [groups - used for _, used in seen]
    assert all(len(missing) == 1 for missing in left_out)
    assert sorted(next(iter(m)) for m in left_out[::2]) == sorted(groups)
    # Every example question is a positive once, out of fold; in-fold figures beside them.
    questions = sum(len(b.trigger_questions) for t in TASKS for b in t.registry)
    assert result["all"]["positives"] == questions
    assert result["in_fold"]["all"]["positives"] > 0
    for group, figures in result["groups"].items():
        assert figures["setting"]["target"] in {s.target for s in nested.GRID}, group
    assert set(result["spam_tasks_answering"]) == set(nested.spam.FORMS)


def test_the_inner_choice_keeps_a_setting_that_holds_the_targets():
    setting, table = nested.choose_setting(TASKS, Featurizer(_embed))
    assert setting in nested.GRID
    assert len(table) == len(nested.GRID)
    holding = [
        key
        for key, figures in table.items()
        if all(figures[d]["precision"] >= nested.MUST[d] for d in nested.MUST)
    ]
    assert holding  # the synthetic tasks are easy: some setting holds every target
    assert f"{setting.target}/{setting.sql_floor}/{setting.swe_floor}" in holding
