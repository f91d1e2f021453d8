"""Rows of the hardware a trace describes: machines, their CPUs and GPUs (model.TraceModel keeps them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..storage import Arg


@dataclass(slots=True, eq=False)
class CpuRow:
    ucpu: int
    cpu: int
    machine_id: int
    cluster_id: int = 0  # trace_processor's column is never NULL
    processor: str | None = None
    capacity: int | None = None
    args: list[Arg] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class GpuRow:
    ugpu: int
    gpu: int
    machine_id: int
    name: str | None = None
    vendor: str | None = None
    model: str | None = None
    architecture: str | None = None
    uuid: str | None = None
    pci_bdf: str | None = None
    args: list[Arg] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class MachineRow:
    """A machine table row. SystemInfo fills the description (each packet sets the fields it has)."""

    id: int
    raw_id: int
    name: str | None = None
    sysname: str | None = None
    release: str | None = None
    version: str | None = None
    arch: str | None = None
    num_cpus: int | None = None
    android_build_fingerprint: str | None = None
    android_device_manufacturer: str | None = None
    android_sdk_version: int | None = None
    system_ram_bytes: int | None = None
    label_index: int = 0  # 0 for the host, 1..n for the others in id order (set when written)

    def row(self) -> tuple:
        ram = self.system_ram_bytes
        return (
            self.id,
            self.raw_id,
            self.name,
            self.sysname,
            self.release,
            self.version,
            self.arch,
            self.num_cpus,
            self.android_build_fingerprint,
            self.android_device_manufacturer,
            self.android_sdk_version,
            ram,
            round(ram / 1e9) if ram else None,
            self.label_index,
        )
