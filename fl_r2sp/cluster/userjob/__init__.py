"""Your own training job in cluster mode: the contract of its factories, written once.

A job is four import paths ``package.module:attribute`` (the built-in names are paths too,
:mod:`.catalog`). Every factory is called with the keywords it declares among those offered
below, so it names only what it needs (``def model(): ...`` is fine).

model (``--model``, required)
    ``model(seed) -> torch.nn.Module``. Called on every rank with torch's generator seeded
    with ``--seed`` (and restored after), so every rank builds the same initial weights. Its
    trainable parameters (``requires_grad``) are what the scheme synchronises; buffers
    (BatchNorm statistics) stay on each worker. Built on the CPU, moved to the worker's
    device (``--devices``).
dataset (``--dataset``, required)
    ``dataset(seed, rank, world_size, data_dir) -> data``: ``rank`` is this worker's index
    0..N-1 and ``world_size`` the number N of workers (parameter servers are not counted);
    ``data_dir`` is ``--data-dir`` (None if not given). ``data`` is either

    * a **map-style dataset** (``__len__`` and ``__getitem__(i) -> (x, y)`` tensors): each
      worker draws its batches from it with its own seeded permutations, and batches are
      stacked with ``torch.utils.data.default_collate``. Every scheme works with it,
      including those that resize batches (R²SP's ``--tuning``); ``--max-train`` keeps a
      seeded subset; or
    * an **iterable of** ``(x, y)`` **batches** (a ``DataLoader``, a generator): taken as it
      yields them, iterated again when it ends (a one-shot iterator that ends is an error).
      Its batch size is its own, so a scheme that resizes batches refuses it.
loss (``--loss``, optional)
    ``loss(outputs, targets) -> scalar tensor``, ``outputs = model(x)``; a class is
    instantiated once without arguments (``torch.nn:CrossEntropyLoss``). Default:
    cross-entropy over the last dimension of the outputs
    (``fl_r2sp.cluster.userjob.builtin:cross_entropy``).
evaluate (``--evaluate``, optional)
    ``evaluate(model, device, seed, data_dir) -> {name: number}``, called at the end of the
    run with the final model on ``device`` in eval mode, under ``torch.no_grad``; its metrics
    go into the summary (``test_accuracy`` and ``test_loss`` keep their usual place). Default:
    accuracy and loss on ``--eval-samples`` test examples for a built-in dataset, none for
    yours.

Checked before any rank starts (:func:`~.job.check_job`): every path resolves to a callable,
the model factory returns an ``nn.Module``, worker 0's data is map-style or iterable, a batch
of two examples runs through the model, and the loss returns a scalar tensor. A violation
raises :class:`~fl_r2sp.importpath.ImportPathError` naming the path and what was wrong (the
command line exits 2 with it). This package imports no torch until a job is built.

The package only namespaces its modules (:mod:`.job`, :mod:`.builtin`, :mod:`.catalog`,
:mod:`.batches`).
"""

__all__: list[str] = []
