"""A subgoal's text words its args by ``TaskSpec.arg_words`` where given (LIBERO's instance names), as they are
otherwise; the words survive the memory's JSON round trip."""

from __future__ import annotations

from memory.records import task_from_json, task_to_json
from tandem.core.types import TaskSpec


def test_subgoal_text_uses_the_words_of_each_arg():
    spec = TaskSpec(name="t", instruction="x", objects=("alphabet_soup_1",), max_steps=10,
                    skills={"put_in": "in({0},{1})"}, skill_texts={"put_in": "put the {0} in the {1}"},
                    arg_words={"alphabet_soup_1": "alphabet soup", "basket_1_contain_region": "basket"})
    assert spec.subgoal_text("put_in", ("alphabet_soup_1", "basket_1_contain_region")) == \
        "put the alphabet soup in the basket"
    assert spec.subgoal_text("put_in", ("milk_1", "basket_1_contain_region")) == "put the milk_1 in the basket"
    assert spec.subgoal_text("wave", ("alphabet_soup_1",)) == "wave alphabet soup"


def test_without_arg_words_names_are_written_as_they_are():
    spec = TaskSpec(name="t", instruction="x", objects=("red",), max_steps=10,
                    skill_texts={"pick": "pick up the {0} cube"})
    assert spec.subgoal_text("pick", ("red",)) == "pick up the red cube"


def test_arg_words_round_trip_through_memory_json():
    spec = TaskSpec(name="t", instruction="x", objects=("a_1",), max_steps=10, arg_words={"a_1": "a"})
    assert task_from_json(task_to_json(spec)).arg_words == {"a_1": "a"}
