"""Fixtures of the picture tests."""

import pytest
from gallery_models import recorder


@pytest.fixture(scope="module")
def recorded():
    """name -> (Step, GradientFlow, default Scene) of a gallery model, each made once per
    module, on demand (the gallery's models are slow to build: a module asks only for some)."""
    return recorder()
