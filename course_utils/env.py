"""Where am I running? Framework report, accelerator detection, what the CPU offers, problem sizes: every
number depends on the machine, so every notebook starts with ``report()`` and declares its sizes with ``sizes()``."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, TypeVar

from course_utils import declare, display, validate
from course_utils.validate import FRAMEWORKS

T = TypeVar("T")

SIZES = ("smoke", "ci", "cpu", "gpu", "tpu")
ACCELERATORS = ("cpu", "gpu", "tpu")
# Where a size is missing, fall back along this chain (a GPU run without a gpu= size uses cpu=).
_FALLBACK = {"smoke": ("smoke", "ci", "cpu"), "ci": ("ci", "cpu"), "cpu": ("cpu",), "gpu": ("gpu", "cpu"),
             "tpu": ("tpu", "gpu", "cpu")}
# smoke: ci sizes with a tenth of the timing (fewer blocks per measurement). It only checks that a notebook runs
# to the end (the runs without a framework, the learner edition); nbval and the stored outputs use ci.
SMOKE_TIME_SCALE = 0.1


@functools.cache
def accelerator() -> str:
    """Return "tpu", "gpu" or "cpu": the accelerator this machine offers, found without importing a framework;
    ``COURSE_ACCELERATOR`` overrides the detection (useful to rehearse a GPU path's sizes on a laptop)."""
    forced = os.environ.get("COURSE_ACCELERATOR", "").strip().lower()
    if forced:
        if forced not in ACCELERATORS:
            raise ValueError(f"COURSE_ACCELERATOR must be one of {ACCELERATORS}; got {forced!r}")
        return forced
    return "tpu" if _tpu_present() else "gpu" if _gpu_present() else "cpu"


def _tpu_present() -> bool:
    """A TPU runtime's variables (Colab, Cloud TPU VMs) or a TPU's device files."""
    return bool(os.environ.get("COLAB_TPU_ADDR") or os.environ.get("TPU_ACCELERATOR_TYPE")
                or os.environ.get("TPU_NAME") or any(Path("/dev").glob("accel[0-9]*"))
                or any(Path("/dev").glob("vfio/[0-9]*")))


def _gpu_present() -> bool:
    """An NVIDIA driver's device or an AMD GPU's compute device (ROCm's /dev/kfd)."""
    return Path("/dev/nvidia0").exists() or Path("/dev/kfd").exists() or Path("/proc/driver/nvidia/gpus").is_dir()


# ---------------------------------------------------------------------------------------------------------
# What the CPU offers, read from the OS: machines differ between sessions, so notebooks decide from this detection

_SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "neon", "asimd")


def _cpuinfo(*keys: str) -> str | None:
    """The value of the first line of /proc/cpuinfo that starts with one of ``keys``; None where there is none."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text(errors="replace").splitlines() if cpuinfo.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.lower().startswith(keys)), None)


@functools.cache
def cpu_model() -> str:
    """The CPU's marketing name, e.g. 'AMD EPYC 7B13' (falls back to platform.processor())."""
    if named := _cpuinfo("model name", "hardware"):
        return named
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


@functools.cache
def simd_flags() -> tuple[str, ...]:
    """The vector-unit flags that decide fp32/bf16 speed on this CPU (avx2, avx512f, amx_bf16, neon, ...)."""
    listed = _cpuinfo("flags", "features")
    arm = platform.machine() in ("arm64", "aarch64")  # macOS lists no flags; its arm64 CPUs have neon
    found = set(listed.split()) if listed is not None else {"neon"} if arm else set()
    return tuple(flag for flag in _SIMD_FLAGS if flag in found)


def has_native_bf16() -> bool:
    """True where the CPU has bf16 arithmetic units (AVX512-BF16 or AMX); on others bf16 is emulated and slow."""
    return bool({"avx512_bf16", "amx_bf16"} & set(simd_flags()))


@functools.cache
def cache_sizes() -> dict[str, int]:
    """Bytes per data cache level of CPU 0 as the OS reports them ({'L1d': ..., 'L2': ..., 'L3': ...}); empty where
    /sys is not available (macOS)."""
    sizes: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index[0-9]*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        name = f"L{level}" + ("d" if kind == "Data" else "")
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        sizes[name] = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return sizes


def last_level_cache_bytes() -> int:
    """The largest cache's size in bytes, or 32 MiB where the OS does not say."""
    return max(cache_sizes().values(), default=32 * 2**20)


def size_name() -> str:
    """Return the active size: ``COURSE_SIZE`` if set (smoke, ci, cpu, gpu, tpu), else the accelerator's name."""
    requested = os.environ.get("COURSE_SIZE", "").strip().lower()
    if not requested or requested == "auto":
        return accelerator()
    if requested not in SIZES:
        raise ValueError(f"COURSE_SIZE must be one of {SIZES} or 'auto'; got {requested!r}")
    return requested


def pick(*, ci: T | None = None, cpu: T | None = None, gpu: T | None = None, tpu: T | None = None,
         smoke: T | None = None) -> T:
    """Return the value for the active size (see ``size_name``), falling back tpu -> gpu -> cpu and smoke -> ci ->
    cpu: ``n = pick(ci=2**16, cpu=2**22, gpu=2**26)`` keeps CI fast and makes effects visible on a GPU."""
    options = {"smoke": smoke, "ci": ci, "cpu": cpu, "gpu": gpu, "tpu": tpu}
    if cpu is None:
        raise ValueError("pick() needs cpu= (the fallback for every other size)")
    return next(options[name] for name in _FALLBACK[size_name()] if options[name] is not None)


@dataclass(frozen=True, repr=False)
class Sizes(display.Tabled):
    """One notebook's problem sizes, chosen in one visible place: each name's value at every size and the active
    one. Read a value as an attribute (``sizes.rows``) and pass it down as an argument; shown as a table."""

    choices: dict[str, dict[str, object]]
    active: str

    def __getattr__(self, name: str) -> object:
        if name.startswith("_") or name not in self.choices:
            raise AttributeError(f"no size named {name!r}; this notebook's sizes are {sorted(self.choices)}")
        return pick(**self.choices[name])

    def table(self) -> display.Table:
        """Rows: the names; columns: every size (a blank falls back as ``pick`` does); the active one marked."""
        header = ["size", *(f"{s} (this run)" if s == self.active else s for s in SIZES)]
        rows = [[name, *("" if options.get(s) is None else str(options[s]) for s in SIZES)]
                for name, options in self.choices.items()]
        return display.table(header, rows, title=f"Problem sizes: this run uses {self.active!r} "
                             "(COURSE_SIZE; a blank falls back: smoke to ci to cpu, tpu to gpu to cpu)")


@declare.checked
def sizes(**choices: dict[str, object]) -> Sizes:
    """A notebook's problem sizes, declared at its top (``cu.env.sizes(rows=dict(ci=8192, cpu=16384, gpu=262144))``):
    each name needs ``cpu=`` and only ``SIZES``; each value is resolved now, so a bad table fails here."""
    if not choices:
        raise ValueError("sizes() needs at least one name=dict(ci=..., cpu=..., ...)")
    for name, options in choices.items():
        unknown = sorted(set(options) - set(SIZES))
        if unknown:
            raise ValueError(f"sizes: {name} names {unknown}; the sizes are {SIZES}")
        try:
            pick(**options)
        except ValueError as error:
            raise ValueError(f"sizes: {name}: {error}") from None
    return Sizes({name: dict(options) for name, options in choices.items()}, size_name())


def time_scale() -> float:
    """The share of its ``min_time`` a measurement spends: 1, or ``SMOKE_TIME_SCALE`` at smoke size."""
    return SMOKE_TIME_SCALE if size_name() == "smoke" else 1.0


BUILD_ENV = "COURSE_BUILD_DIR"


@declare.checked
def build_dir(*parts: declare.Text) -> Path:
    """Where generated files go: ``$COURSE_BUILD_DIR``, else ``build/`` at the root of the course checkout the kernel
    runs in, else ``./build``; ``parts`` are relative names inside it (no absolute path, no '..')."""
    for part in parts:
        if Path(part).is_absolute() or ".." in Path(part).parts:
            raise ValueError(f"parts must stay inside the build folder (no absolute path, no '..'); got {part!r}")
    if os.environ.get(BUILD_ENV):
        root = Path(os.environ[BUILD_ENV])
    else:
        here = Path.cwd().resolve()
        checkout = next((d for d in (here, *here.parents)
                         if (d / "pyproject.toml").is_file() and (d / "course_utils").is_dir()), None)
        root = (checkout or here) / "build"
    return root.joinpath(*parts)


def quiet_tensorflow() -> None:
    """Lower TensorFlow's C++ log level and absl's INFO messages (start-up banners); Python warnings still show.
    Call before ``import tensorflow`` for full effect."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if sys.modules.get("absl.logging") is not None:
        sys.modules["absl.logging"].set_verbosity("warning")


def import_tensorflow() -> ModuleType:
    """Import TensorFlow without its start-up banner (C++ INFO lines written to file descriptor 2 before its
    logging is configured are dropped during the import only); return the module. Exceptions still raise."""
    quiet_tensorflow()
    if sys.modules.get("tensorflow") is None:
        with silenced_stderr():
            import tensorflow  # noqa: F401  (raises ModuleNotFoundError where TensorFlow is absent)
    return sys.modules["tensorflow"]


@contextlib.contextmanager
def silenced_stderr() -> Iterator[None]:
    """Drop what C++ code writes to file descriptor 2 inside the block (banners that Python cannot catch)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


@declare.checked
def fail_on_deprecations(module: Annotated[str, declare.NonEmpty, declare.Regex] = r"__main__|course_utils(\..*)?",
                         ) -> None:
    """Turn DeprecationWarning/FutureWarning raised from ``module`` (a regular expression: the notebook's own code)
    into errors, so a course that teaches a deprecated API fails under nbval; libraries' own warnings stay."""
    for category in (DeprecationWarning, FutureWarning):
        warnings.filterwarnings("error", category=category, module=module)


# ---------------------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class FrameworkInfo:
    """One framework's version and the devices it sees (or why it could not say)."""

    name: str
    version: str
    devices: tuple[str, ...] = ()


@dataclass(frozen=True, repr=False)
class EnvReport(display.Tabled):
    """The machine and software that produced a notebook's numbers; a table in Jupyter, text in a terminal."""

    python: str
    os: str
    cpu: str
    cores_logical: int
    cores_physical: int | None
    simd: tuple[str, ...]
    ram_gib: float
    accelerator: str
    size: str
    colab: bool
    frameworks: tuple[FrameworkInfo, ...] = field(default_factory=tuple)
    load_average: tuple[float, float, float] | None = None

    def rows(self) -> list[tuple[str, str]]:
        """(key, value) pairs in display order."""
        cores = f"{self.cores_logical} logical" + (f", {self.cores_physical} physical" if self.cores_physical else "")
        rows = [("Python", self.python), ("OS", self.os), ("CPU", self.cpu), ("Cores", cores),
                ("SIMD", ", ".join(self.simd) or "none detected"), ("RAM", f"{self.ram_gib:.1f} GiB"),
                ("Accelerator", self.accelerator), ("COURSE_SIZE", self.size), ("Colab", "yes" if self.colab else "no")]
        if self.load_average is not None:
            busy = " (busy: timings will be noisy)" if self.load_average[0] > self.cores_logical else ""
            rows.append(("Load average", " ".join(f"{v:.1f}" for v in self.load_average) + busy))
        for fw in self.frameworks:
            value = fw.version if not fw.devices else f"{fw.version}  [{', '.join(fw.devices)}]"
            rows.append((fw.name, value))
        return rows

    def table(self) -> display.Table:
        return display.table(["", "this machine"], self.rows(), title="Environment")


@declare.checked
def report(devices: bool = True) -> EnvReport:
    """Describe this machine and the installed frameworks; absent frameworks say "not installed". ``devices=True``
    imports each installed framework to list its devices (seconds for TensorFlow)."""
    import psutil

    frameworks = tuple(_framework_info(name, devices) for name in FRAMEWORKS)
    return EnvReport(
        python=platform.python_version(),
        os=f"{platform.system()} {platform.release()} ({platform.machine()})",
        cpu=cpu_model(),
        cores_logical=os.cpu_count() or 1,
        cores_physical=psutil.cpu_count(logical=False),
        simd=simd_flags(),
        ram_gib=psutil.virtual_memory().total / 2**30,
        accelerator=accelerator(),
        size=size_name(),
        colab="google.colab" in sys.modules,
        frameworks=frameworks,
        load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
    )


def installed_frameworks() -> list[str]:
    """The frameworks among torch, jax and tensorflow installed here, without importing them."""
    return [name for name in FRAMEWORKS if available(name)]


def available(framework: str) -> bool:
    """True when ``framework`` ('torch', 'jax', 'tensorflow'/'tf') can be imported here; nothing is imported (a
    runtime without it, such as Colab's TPU runtimes or the course's ``COURSE_BLOCK`` shim, answers False)."""
    name = validate.framework(framework)
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _installed_version(name: str) -> str | None:
    if not available(name):
        return None
    dists = {"tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"), "jax": ("jax",), "torch": ("torch",)}
    for dist in dists.get(name, (name,)):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _framework_info(name: str, with_devices: bool) -> FrameworkInfo:
    version = _installed_version(name)
    if version is None:
        return FrameworkInfo(name, "not installed")
    if not with_devices:
        return FrameworkInfo(name, version)
    try:
        return FrameworkInfo(name, version, _devices(name))
    except Exception as exc:  # a broken install is reported, never raised: the notebook goes on
        return FrameworkInfo(name, version, (f"error: {type(exc).__name__}: {exc}"[:120],))


def _devices(name: str) -> tuple[str, ...]:
    if name == "torch":
        import torch

        found = ["cpu"]
        if torch.cuda.is_available():
            found += [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            found.append("mps")
        return tuple(found)
    if name == "jax":
        import jax

        return tuple(f"{d.platform}:{d.id} {getattr(d, 'device_kind', '')}".strip() for d in jax.devices())
    if name == "tensorflow":
        tf = import_tensorflow()
        return tuple(d.name.replace("/physical_device:", "") for d in tf.config.list_physical_devices())
    raise ValueError(f"framework must be one of {FRAMEWORKS}; got {name!r}")
