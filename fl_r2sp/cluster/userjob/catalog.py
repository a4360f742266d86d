"""The built-in models and datasets as import paths of factories (no torch imported here).

A registry name (``--model mlp``, ``--dataset synthetic``) is a short name for the import path
of a factory in :mod:`fl_r2sp.cluster.userjob.builtin` that keeps the user's contract
(:mod:`fl_r2sp.cluster.userjob`), so a built-in run and a user's run take one path. This
table is torch-free so that the command line can refuse a bad name without importing torch.

A generated dataset's shape follows the model (``synthetic`` is flat 64-vectors for the MLPs
and 3x32x32 images for the CNNs), so a built-in dataset name needs a built-in model, given by
its name or by its factory's import path.
"""

from __future__ import annotations

from fl_r2sp.importpath import is_import_path

#: Datasets of 3x32x32 images, flat 64-vectors and token sequences.
IMAGE_DATASETS = frozenset({"cifar10", "synthetic"})
FLAT_DATASETS = frozenset({"synthetic"})
SEQ_DATASETS = frozenset({"copy", "reverse"})
BUILTIN = "fl_r2sp.cluster.userjob.builtin"

#: Built-in model name -> the dataset names whose examples fit it.
MODEL_DATASETS: dict[str, frozenset[str]] = {
    "mlp": FLAT_DATASETS,
    "mlp-wide": FLAT_DATASETS,
    "resnet32": IMAGE_DATASETS,
    "alexnet": IMAGE_DATASETS,
    "vgg16": IMAGE_DATASETS,
    "transformer": SEQ_DATASETS,
}
MODEL_NAMES: tuple[str, ...] = tuple(MODEL_DATASETS)
DATASET_NAMES: tuple[str, ...] = ("cifar10", "synthetic", "copy", "reverse")
#: The loss of every built-in model: cross-entropy over the last dimension of the outputs.
DEFAULT_LOSS = f"{BUILTIN}:cross_entropy"


def model_factory_path(model: str) -> str:
    """The import path of ``model``'s factory (``model`` itself if it is a path).

    Raises
    ------
    ValueError
        If ``model`` is neither a path nor a built-in name.
    """
    if is_import_path(model):
        return model
    if model not in MODEL_DATASETS:
        raise ValueError(f"unknown cluster model {model!r}; choose one of {list(MODEL_NAMES)} "
                         "or give a factory's import path 'package.module:function'")  # fmt: skip
    return f"{BUILTIN}:{model.replace('-', '_')}"


def builtin_model_name(model: str) -> str | None:
    """The registry name of ``model`` (a name, or the import path of a built-in factory), or
    None for a user's model."""
    if not is_import_path(model):
        return model if model in MODEL_DATASETS else None
    for name in MODEL_NAMES:
        if model_factory_path(name) == model:
            return name
    return None


def dataset_factory_path(dataset: str, model: str) -> str:
    """The import path of ``dataset``'s factory for ``model`` (``dataset`` if it is a path).

    Raises
    ------
    ValueError
        If ``dataset`` is an unknown name, or a built-in name with a model that does not take
        it (a user's model takes no built-in dataset: its input shape is unknown here).
    """
    if is_import_path(dataset):
        return dataset
    if dataset not in DATASET_NAMES:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {list(DATASET_NAMES)} or "
                         "give a factory's import path 'package.module:function'")  # fmt: skip
    name = builtin_model_name(model)
    if name is None:
        raise ValueError(f"dataset {dataset!r} is built for the built-in models; give model "
                         f"{model!r} its own dataset by import path")  # fmt: skip
    check_model_dataset(name, dataset)
    if dataset == "synthetic":
        return f"{BUILTIN}:synthetic_{'flat' if name.startswith('mlp') else 'image'}"
    return f"{BUILTIN}:{dataset}"


def builtin_dataset_name(dataset: str, model: str) -> str | None:
    """The registry name of ``dataset`` (a name, or the import path of a built-in factory that
    fits ``model``), or None for a user's dataset."""
    for name in DATASET_NAMES:
        try:
            if dataset in (name, dataset_factory_path(name, model)):
                return name
        except ValueError:  # a name the model does not take
            continue
    return None


def check_model_dataset(name: str, dataset: str) -> None:
    """Raise ValueError unless built-in model ``name`` takes built-in dataset ``dataset``."""
    takes = MODEL_DATASETS.get(name)
    if takes is None:
        raise ValueError(f"unknown cluster model {name!r}; choose one of {list(MODEL_NAMES)}")
    if dataset not in takes:
        ok = sorted(n for n, s in MODEL_DATASETS.items() if dataset in s)
        raise ValueError(f"model {name!r} does not take dataset {dataset!r} (it takes "
                         f"{sorted(takes)}); models for {dataset!r}: {ok}")  # fmt: skip


def short_name(spec: str) -> str:
    """A name for folders: the attribute of an import path, else ``spec`` itself."""
    return spec.rsplit(":", 1)[-1].replace(".", "-") if is_import_path(spec) else spec
