"""The examples in the public docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "robustream.batch",
    "robustream.sketch",
    "robustream.solver",
    "robustream.learners.rgd",
    "robustream.learners.coreset_svm",
    "robustream.learners.ramp",
    "robustream.learners.ordi",
    "robustream.learners.registry",
    "robustream.evaluate",
    "robustream.replay",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
