"""Named network/device profiles (capacities in bytes/s, compute in s/iteration).

``paper-ec2`` — calibrated to the FL-R²SP paper (128 t2.small clients, one
m5.4xlarge server; Tables II, IV, V). The arithmetic
(``docs/paper-notes.md`` §4):

* Client links: Table II, ResNet20 (272,474 float32 = 1.09 MB) uncontended
  push + pull takes 0.13 s -> 2 x 1.09 MB / 0.13 s = 16.8 MB/s each way.
* Server link, fair sharing: BSP releases 96 clients at once, FL-R²SP 12;
  pull time x 1 / (n x size) gives 7.9, 8.7, 8.8, 7.9 MB/s over the four
  (model, scheme) cells of Table V -> 8.3 MB/s each way (mean, rounded),
  which reproduces the paper's pulls within about 10%.
* ``paper-ec2-fcfs``: a server that sends one model at a time at 4.4 MB/s
  (both directions). Fair sharing ends all BSP pulls at once, so pushes collide
  (~3 s vs the paper's 0.38 s); a serializing sender spreads them out. At
  4.4 MB/s, 96 CNN pulls of 0.25 MB end on average at (96+1)/2 x 0.057 s = 2.8 s,
  matching Table V's 2.73 s.
* No per-transfer overhead: the calibration fits without one.
* Known deviation: a lone client is capped by the server link, so the CNN's
  uncontended push + pull takes 2 x 0.25 MB / 8.3 MB/s = 0.060 s here, not
  Table II's 0.03 s (the 0.03 s only constrains the client links). Table V is
  the calibration target; Table II's contended figures differ in setup anyway.
* Seconds per local iteration: Table IV round time minus Table V pull and push
  minus the 0.27 s delay quantile the 96th of 128 clients waits for, over 100
  iterations: CNN (10.69-2.73-0.38-0.27)/100 = 0.073 -> 0.070 (the calibration
  note's round figure); LSTM (9.41-2.12-0.36-0.27)/100 = 0.067; ResNet20
  (44.90-13.28-1.19-0.27)/100 = 0.30. Models the paper did not run are
  estimated from an affine fit t = a + b x MACs through the CNN (LeNet-5-sized,
  0.65 M MACs per sample) and ResNet20 (41 M MACs) points: a = 0.066 s,
  b = 0.0057 s per M MAC. FedAvg's two-conv CIFAR CNN (17.7 M MACs): 0.167 s;
  the digits MLP (negligible MACs): 0.066 s. These two are estimates, not
  measurements.

``lan`` — no contention (1 TB/s everywhere, fair), same compute as paper-ec2.

A profile name may carry a per-transfer overhead, ``paper-ec2(overhead=0.3)``:
every pull and push first waits that many seconds without using bandwidth
(``docs/architecture.md`` §5), e.g. the paper's push floor of about 0.34 s
(Table V), which suggests a per-call RPC cost. It is a knob for what-if runs
(Fig. 18), not part of the calibration above.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from ._spec import Params, parse_spec

_PAPER_COMPUTE = MappingProxyType(
    {
        "cnn": 0.070,
        "lstm": 0.067,
        "resnet20": 0.30,
        "resnet20-a": 0.30,
        "cnn-fedavg": 0.167,
        "mlp": 0.066,
    }
)

#: Client link capacity from Table II (bytes/s).
PAPER_CLIENT_LINK = 16.8e6
#: Server link capacity for fair sharing, fitted to Table V (bytes/s).
PAPER_SERVER_FAIR = 8.3e6
#: Server link capacity for a first-come-first-served sender (bytes/s).
PAPER_SERVER_FCFS = 4.4e6


@dataclass(frozen=True)
class Profile:
    """Capacities (bytes/s), disciplines, per-transfer overhead (s) and compute speed.

    ``seconds_per_iteration`` maps a model name (``cnn``, ``lstm``,
    ``resnet20``, ``mlp``, ``cnn-fedavg``) to seconds per local SGD iteration.
    """

    name: str
    server_egress: float
    server_ingress: float
    client_down: float
    client_up: float
    egress_discipline: Literal["fair", "fcfs"] = "fair"
    ingress_discipline: Literal["fair", "fcfs"] = "fair"
    overhead: float = 0.0
    seconds_per_iteration: Mapping[str, float] = field(default_factory=lambda: _PAPER_COMPUTE)

    def iteration_seconds(self, model: str) -> float:
        """Seconds per local iteration of ``model``.

        Raises
        ------
        ValueError
            If the profile has no figure for ``model``.
        """
        try:
            return float(self.seconds_per_iteration[model])
        except KeyError:
            raise ValueError(
                f"profile {self.name!r} has no compute speed for model {model!r}; "
                f"known: {sorted(self.seconds_per_iteration)}"
            ) from None


#: The affine fit t = a + b x MACs of the module docstring: a in s, b in s per million MACs.
FIT_INTERCEPT_S = 0.066
FIT_SLOPE_S_PER_MMAC = 0.0057


def estimated_iteration_seconds(macs_per_sample: float) -> float:
    """Seconds per local iteration of a model no profile lists (a user's), from its MACs.

    The fit through the CNN and ResNet-20 points that also times cnn-fedavg and mlp
    (module docstring): ``0.066 + 0.0057 x (macs_per_sample / 1e6)``. An estimate of the
    paper's EC2 clients, not a measurement of the user's model.
    """
    if not macs_per_sample >= 0:
        raise ValueError(f"macs_per_sample must be >= 0, got {macs_per_sample}")
    return FIT_INTERCEPT_S + FIT_SLOPE_S_PER_MMAC * macs_per_sample / 1e6


PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        "paper-ec2": Profile(
            "paper-ec2", PAPER_SERVER_FAIR, PAPER_SERVER_FAIR, PAPER_CLIENT_LINK, PAPER_CLIENT_LINK
        ),
        "paper-ec2-fcfs": Profile(
            "paper-ec2-fcfs",
            PAPER_SERVER_FCFS,
            PAPER_SERVER_FCFS,
            PAPER_CLIENT_LINK,
            PAPER_CLIENT_LINK,
            egress_discipline="fcfs",
            ingress_discipline="fcfs",
        ),
        "lan": Profile("lan", 1e12, 1e12, 1e12, 1e12),
    }
)


def get_profile(name: str) -> Profile:
    """Return the profile called ``name``, optionally with an overhead: ``lan(overhead=0.3)``.

    Raises
    ------
    ValueError
        If no such profile exists (the message lists the known names), or the
        overhead is not a number >= 0.
    """
    spec = name
    if "(" in name:
        base, raw = parse_spec(name, "network")
        name = base
        overhead = Params(spec, raw, ("overhead",)).num("overhead", 0.0, 0.0)
    try:
        profile = PROFILES[name]
    except KeyError:
        raise ValueError(
            f"unknown network profile {name!r}; choose one of {sorted(PROFILES)}"
            ", optionally with (overhead=seconds)"
        ) from None
    return profile if spec == name else replace(profile, name=spec, overhead=overhead)
