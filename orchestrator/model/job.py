"""A planned job: one variant x run x case x repeat on one device, before it runs, and
the place in the plan (`slot`) that it shares with the attempt that ran it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from orchestrator.model.record import Record
from orchestrator.model.results import Attempt


class Fanout(enum.Enum):
    SHARD = "shard"
    REPLICATE = "replicate"


@dataclass(frozen=True)
class Job(Record):
    variant: str
    run: str
    case: str
    repeat: int  # from 0
    device: str = ""  # CUDA_VISIBLE_DEVICES for this job; "" = leave it alone
    rank: int = 0  # the device's index in --devices

    def stem(self) -> str:
        """The job's log name inside the bundle's logs directory (per rank with devices)."""
        device = device_label(self.device).replace("/", "-")  # a MIG id's slashes
        rank = f"-rank{self.rank}-{device}" if self.device else ""
        return f"{self.variant}/{self.run}/{self.case}/r{self.repeat}{rank}"


def slot(item: Job | Attempt) -> tuple[str, str, str, int, str]:
    """The place a job holds in the plan, shared by the attempt that ran it."""
    return (item.variant, item.run, item.case, item.repeat, item.device)


def device_label(device: str) -> str:
    """How reports name a device: `gpu1` for an index, the UUID itself for a UUID."""
    return f"gpu{device}" if device.isdigit() else device
