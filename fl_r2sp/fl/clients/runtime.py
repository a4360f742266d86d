"""Client-side work for one job: local training plus the emulated timings.

Shared by the Flower ClientApp and the in-process transport, so that both
produce bit-identical weights for the same (seed, partition id, job index).
Speaks :mod:`fl_r2sp.fl.protocol` and never imports ``fl_r2sp.fl.server``; the
server-side helpers (central evaluation, the initial model) live in
:mod:`fl_r2sp.fl.server.evaluation`. :func:`data_for` stays here because the
clients train on its partitions; the server reads the same memoised data
through it (server -> clients is the allowed direction).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fl_r2sp.datasets import dataset_info
from fl_r2sp.datasets.federated import FederatedData, federated_data
from fl_r2sp.emulation.delays import make_delay
from fl_r2sp.emulation.devices import make_device_model
from fl_r2sp.fl.clients.attacks import AttackPlan
from fl_r2sp.fl.clients.timing import iteration_seconds
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.models import build_model, resolve_model_name
from fl_r2sp.models.weights import arrays_to_state, flatten, state_to_arrays, unflatten
from fl_r2sp.training import set_torch_threads, train_local

# Streams of the per-job SGD seed; the delay models use the emulation's own.
_SGD_STREAM = 11


def data_for(cfg: RunConfig) -> FederatedData:
    """The (memoised) federated data set a config describes."""
    return federated_data(
        dataset=cfg.dataset,
        num_partitions=cfg.num_partitions,
        partitioner=cfg.partitioner,
        alpha=cfg.alpha,
        outlier_alpha=cfg.outlier_alpha,
        outlier_fraction=cfg.outlier_fraction,
        samples_per_client=cfg.samples_per_client,
        max_train_samples=cfg.max_train_samples,
        seed=cfg.seed,
        data_dir=cfg.data_dir or None,
        download=cfg.download,
    )


def job_seed(seed: int, cid: int, index: int) -> int:
    """SGD seed of a job: a pure function of (run seed, client, job index)."""
    ss = np.random.SeedSequence([seed, cid, index, _SGD_STREAM])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


@dataclass
class ClientRuntime:
    """Runs jobs for any partition id of one run configuration.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (data, model, SGD and emulation knobs).
    """

    cfg: RunConfig

    def __post_init__(self) -> None:
        set_torch_threads(self.cfg.torch_threads)
        self.model_name = resolve_model_name(self.cfg.model, self.cfg.dataset)
        self.model = build_model(self.model_name, num_classes=self._num_classes(), seed=0)
        self.template = state_to_arrays(self.model)
        base = iteration_seconds(self.cfg, self.model)  # one rule with the server's JobTiming
        self.device = make_device_model(self.cfg.device, base)
        self.delay = make_delay(self.cfg.delay)
        # Hostile behaviour (attack, attack-fraction): off unless configured; a bad spec
        # fails here, before any training.
        self.attacks = AttackPlan.of(
            self.cfg.attack, self.cfg.attack_fraction, self.cfg.seed, self.cfg.num_partitions
        )

    def _num_classes(self) -> int:
        return dataset_info(self.cfg.dataset)[1]

    def compute_seconds(self, cid: int) -> float:
        """Client ``cid``'s compute time without jitter: device speed x tau (no delay).

        A lower bound of every job's :meth:`job_compute_seconds`, which the
        virtual loop's conservative rule uses.
        """
        return self.device.seconds_per_iteration(self.cfg.seed, cid) * self.cfg.local_iterations

    def job_compute_seconds(self, cid: int, index: int) -> float:
        """Modelled compute time of job ``index`` of ``cid``: :meth:`compute_seconds` x jitter.

        Equal to :meth:`compute_seconds` unless the device spec sets ``jitter``.
        """
        return self.compute_seconds(cid) * self.device.job_multiplier(self.cfg.seed, cid, index)

    def run(self, job: Job, sleep_delay: bool = False) -> Reply:
        """Train ``job.weights`` on partition ``job.cid`` and time it.

        Parameters
        ----------
        job : Job
            What to train.
        sleep_delay : bool (default: False)
            Sleep the injected delay for real (wall-clock mode).
        """
        delay = self.delay.sample_for(self.cfg.seed, job.cid, job.index)
        if self.cfg.timing_only:
            # Timing experiments: no SGD, the model is echoed; only the modelled
            # durations (and the transfer sizes) matter.
            reply = Reply(
                job.cid,
                job.index,
                job.tag,
                job.weights,
                num_examples=1,
                compute_s=self.job_compute_seconds(job.cid, job.index),
                delay_s=delay,
            )
        else:
            reply = self._train(job, delay)
        reply = self.attacks.apply(job, reply)
        if sleep_delay and delay > 0:
            time.sleep(delay)  # the paper's clients wait before returning their update
        return reply

    def _train(self, job: Job, delay: float) -> Reply:
        data = data_for(self.cfg).client(job.cid)
        arrays_to_state(self.model, unflatten(job.weights, self.template))
        started = time.perf_counter()
        result = train_local(
            self.model,
            data.x,
            data.y,
            iterations=self.cfg.local_iterations,
            batch_size=self.cfg.batch_size,
            lr=self.cfg.lr,
            momentum=self.cfg.momentum,
            weight_decay=self.cfg.weight_decay,
            seed=job_seed(self.cfg.seed, job.cid, job.index),
            augment=self.cfg.augment,
        )
        measured = time.perf_counter() - started
        compute = (
            measured if self.cfg.clock == "wall" else self.job_compute_seconds(job.cid, job.index)
        )
        return Reply(
            cid=job.cid,
            index=job.index,
            tag=job.tag,
            weights=flatten(state_to_arrays(self.model)),
            num_examples=result.num_examples,
            loss=result.mean_loss,
            compute_s=compute,
            delay_s=delay,
        )


@lru_cache(maxsize=4)
def runtime_for(cfg: RunConfig) -> ClientRuntime:
    """One runtime per config per process (Ray actors reuse it across nodes)."""
    return ClientRuntime(cfg)
