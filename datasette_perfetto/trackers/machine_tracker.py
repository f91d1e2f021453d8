"""Rows of the hardware a trace describes: machines, their CPUs and GPUs (model.TraceModel keeps them)."""

from __future__ import annotations

from ..storage import Arg


class CpuRow:
    __slots__ = ("ucpu", "cpu", "cluster_id", "processor", "machine_id", "capacity", "args")

    def __init__(self, ucpu: int, cpu: int, machine_id: int) -> None:
        self.ucpu = ucpu
        self.cpu = cpu
        self.machine_id = machine_id
        self.cluster_id = 0  # trace_processor's column is never NULL
        self.processor: str | None = None
        self.capacity: int | None = None
        self.args: list[Arg] = []


class GpuRow:
    __slots__ = ("ugpu", "gpu", "machine_id", "name", "vendor", "model", "architecture", "uuid", "pci_bdf", "args")

    def __init__(self, ugpu: int, gpu: int, machine_id: int) -> None:
        self.ugpu = ugpu
        self.gpu = gpu
        self.machine_id = machine_id
        self.name: str | None = None
        self.vendor: str | None = None
        self.model: str | None = None
        self.architecture: str | None = None
        self.uuid: str | None = None
        self.pci_bdf: str | None = None
        self.args: list[Arg] = []


class MachineRow:
    """A machine table row. SystemInfo fills the description (each packet sets the fields it has)."""

    __slots__ = (
        "id",
        "raw_id",
        "name",
        "sysname",
        "release",
        "version",
        "arch",
        "num_cpus",
        "android_build_fingerprint",
        "android_device_manufacturer",
        "android_sdk_version",
        "system_ram_bytes",
        "label_index",
    )

    def __init__(self, id: int, raw_id: int) -> None:
        self.id = id
        self.raw_id = raw_id
        self.name: str | None = None
        self.sysname: str | None = None
        self.release: str | None = None
        self.version: str | None = None
        self.arch: str | None = None
        self.num_cpus: int | None = None
        self.android_build_fingerprint: str | None = None
        self.android_device_manufacturer: str | None = None
        self.android_sdk_version: int | None = None
        self.system_ram_bytes: int | None = None
        self.label_index = 0  # 0 for the host, 1..n for the others in id order (set when written)

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
