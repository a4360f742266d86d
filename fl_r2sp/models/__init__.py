"""Models of the project and the flat-NumPy weights exchange.

Registered models (``MODELS``): ``mlp`` (digits), ``cnn`` and ``cnn-fedavg``
and ``resnet20`` (CIFAR-10, 3x32x32), ``lstm`` (KWS, 98 frames x 40 bins).
``build_model`` is deterministic given its seed; ``serialized_size`` is what
the emulation charges per transfer.
"""

from .registry import (
    AUTO_MODEL,
    MODELS,
    ModelSpec,
    build_model,
    count_parameters,
    model_input_shape,
    resolve_model_name,
    serialized_size,
)
from .weights import (
    arrays_to_state,
    flatten,
    get_flat_weights,
    set_flat_weights,
    state_to_arrays,
    unflatten,
)

__all__ = [
    "AUTO_MODEL",
    "MODELS",
    "ModelSpec",
    "arrays_to_state",
    "build_model",
    "count_parameters",
    "flatten",
    "get_flat_weights",
    "model_input_shape",
    "resolve_model_name",
    "serialized_size",
    "set_flat_weights",
    "state_to_arrays",
    "unflatten",
]
