"""Without the LIBERO extra, tandem's own tasks work, LIBERO names are not listed, and asking for one says how to
install it, in one line."""

from __future__ import annotations

import importlib.util

import pytest

from sim.tasks import registry
from sim.tasks.libero import installation, problem
from tandem.core.errors import ConfigError


@pytest.fixture
def no_libero(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "libero" or name.startswith("libero.") else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for cached in (installation.require_libero, installation.configure_libero, problem.suite_task_names,
                   problem.load_problem):
        cached.cache_clear()
    yield
    for cached in (installation.require_libero, installation.configure_libero, problem.suite_task_names,
                   problem.load_problem):
        cached.cache_clear()


def test_tandem_tasks_are_listed_and_no_libero_task(no_libero):
    names = registry.task_names()
    assert {"stack_three", "pick_place_bins", "nut_assembly"} <= set(names)
    assert not [n for n in names if n.startswith("libero_10/")]


def test_a_libero_task_names_the_install_command(no_libero):
    with pytest.raises(installation.LiberoNotInstalled) as e:
        registry.make_task("libero_10/KITCHEN_SCENE3_turn_on_the_stove_and_put_the_moka_pot_on_it")
    message = str(e.value)
    assert "make libero" in message and "\n" not in message
    assert isinstance(e.value, ConfigError)


def test_libero_installed_is_false_without_the_package(no_libero):
    assert installation.libero_installed() is False
