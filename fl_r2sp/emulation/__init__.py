"""Virtual-time emulation: clocks, event queue, fluid network, client behaviour models.

Pure Python + NumPy; knows nothing of learning. No wall-clock reads (except
:class:`WallClock`) and no global random state: every draw comes from
:func:`rng_for` keyed by (seed, stream, client, job).
"""

from .availability import AvailabilityModel, make_availability
from .clock import Clock, VirtualClock, WallClock
from .delays import DelayModel, make_delay
from .devices import DeviceModel, make_device_model
from .events import Event, EventQueue
from .maxmin import maxmin_rates, maxmin_rates_reference
from .network import FlowInfo, Network, pull_links, push_links, star_network
from .profiles import PROFILES, Profile, get_profile
from .rng import STREAM_DATA, STREAM_DELAY, STREAM_DEVICE, STREAM_DROPOUT, STREAM_SELECTION, rng_for

__all__ = [
    "PROFILES",
    "STREAM_DATA",
    "STREAM_DELAY",
    "STREAM_DEVICE",
    "STREAM_DROPOUT",
    "STREAM_SELECTION",
    "AvailabilityModel",
    "Clock",
    "DelayModel",
    "DeviceModel",
    "Event",
    "EventQueue",
    "FlowInfo",
    "Network",
    "Profile",
    "VirtualClock",
    "WallClock",
    "get_profile",
    "make_availability",
    "make_delay",
    "make_device_model",
    "maxmin_rates",
    "maxmin_rates_reference",
    "pull_links",
    "push_links",
    "rng_for",
    "star_network",
]
