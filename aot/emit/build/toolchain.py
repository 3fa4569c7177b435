"""Host C toolchains: discovery, identity and the project's compile flags.

A :class:`Toolchain` is a frozen record of one C compiler (gcc or clang, or
anything that answers like one) plus the archiver that goes with it.  Its
:attr:`Toolchain.identity` is the compiler's contribution to every build
cache key: the resolved path, the words of ``$CC``, the kind and the full
version banner, so an upgraded compiler never reuses stale objects.

The kind and version are read from the compiler's own predefined macros
(``cc -dM -E``) rather than from the name of the executable: ``cc`` may be
either compiler, and ``$CC`` may name a wrapper such as ``ccache gcc``.

Flags.  Every object the backend builds is compiled with
:data:`STRICT_FLAGS` (the C the emitter writes must be boring, portable and
warning-free), the toolchain's optimisation flags and ``-fPIC``: the same
static library is linked both into firmware and into the cffi extension the
tests load, and a static library linked into a shared object must be
position independent.  ``-fPIC`` costs nothing measurable on the host.

The host's own builds are for the host CPU.  :func:`probe_toolchain` gives
the host compiler :data:`HOST_OPT_FLAGS` (``-O3``; gcc
:data:`GCC_HOST_OPT_FLAGS`, which adds ``-fno-schedule-insns2``) and, as its
:attr:`Toolchain.target_flags`, the first of :data:`NATIVE_FLAGS` it accepts
(``-march=native`` for gcc and clang on x86-64 and AArch64, ``-mcpu=native``
where only that exists, none when neither works; with ``-ffp-contract=off``,
so that no compiler fuses a multiply and an add it was not asked to): without them x86-64's
baseline has no fused multiply-add, so every ``fmaf`` of a convolution is a
call into libm (a correctly rounded software FMA), and ``-O2`` does not
vectorise the ``simd`` loop nests; with them one inference of DS-CNN takes
tens of microseconds instead of milliseconds.  Results do not change: ``fmaf``
is correctly rounded whether it is an instruction or a call, every other
float operation is still rounded on its own (``-ffp-contract=off``, see
:mod:`aot.emit.c.context`) and none of these flags permits reassociation.
What ``native`` means is part of the toolchain's :attr:`Toolchain.identity`
(:attr:`Toolchain.cpu_key`: the compiler's predefined macros under that
flag, which name every instruction-set extension it enables), so a build
cache shared between machines never hands one CPU's objects to another.
gcc's native flags also carry :data:`GCC_NATIVE_WORKAROUND_FLAGS`
(``-mno-avx512vl``) when ``native`` enables AVX-512VL: gcc 12.2's
vectorizer gives the masked loads of an if-converted conditional load the
wrong masks under AVX-512VL (see :func:`_gcc_workaround_flags`).
Cross toolchains (:mod:`aot.emit.build.targets`) replace both with the
core's flags and ``-O2``; the sources and the make fragment never carry
host flags.

Sanitizers.  ``AOT_SANITIZE=address,undefined`` (any comma-separated subset
of :data:`SANITIZERS`) makes :func:`probe_toolchain` and
:func:`find_toolchain` return toolchains whose :attr:`Toolchain.sanitizers`
are set: every object (and the cffi extension, see :mod:`aot.emit.build.extension`)
is then built with :meth:`Toolchain.sanitize_flags` (``-fsanitize=...
-fno-sanitize-recover=all -fno-omit-frame-pointer -g``), so the first error
aborts the process, and at :data:`SANITIZE_OPT_FLAGS` (``-O0``) instead of
``-O3``: nothing is optimised away, so every access is checked as written
and traces are exact; and gcc 12 compiles instrumented C far faster at
``-O0`` (0.3 s against 6.2 s at ``-O2`` for one 2,600-line generated
file), which is what makes re-running the e2e tests sanitized affordable.
The optimised C is what the plain test run checks.

Test builds.  ``AOT_HOST_OPT`` (one of :data:`HOST_OPT_CHOICES`, e.g.
``-O1``) replaces :data:`HOST_OPT_FLAGS` (and gcc's
:data:`GCC_HOST_OPT_FLAGS`) in the host toolchains
:func:`probe_toolchain` and :func:`find_toolchain` return (sanitizers still
build at ``-O0``; cross toolchains keep their own).  It is for tests whose
subject is a program's values, not its speed, with optimised builds of the
same kernels elsewhere in the suite: gcc 12 compiles the 1 MB C of the
float16 ResNet-50 of the corpus in 10 CPU-s at ``-O1`` against 28 s at
``-O3``.  Results do not change (no flag here permits reassociation or
contraction).  Like any flag, it is part of every object's cache key.
:meth:`Toolchain.with_sanitizers` and :meth:`Toolchain.with_opt_flags`
set either explicitly.  The flags are part of every object's compile command and
so of its cache key: sanitized and plain builds never share an object.  A
process that loads such an extension must have the sanitizer runtimes loaded
first (``LD_PRELOAD``, see :func:`sanitizer_runtimes`); the C-backend tests do
this in a subprocess (``tests/e2e/test_sanitizers.py``).  Both runtimes are
the compiler's own: gcc's ``libasan``/``libubsan`` for gcc, clang's
``libclang_rt.*`` for clang (not installed by default on Debian, so the
tests sanitize with gcc).

Errors for users (no compiler, a compile that fails) are raised as
:class:`BuildError`, a :class:`~aot.diagnostics.DiagnosticError` that also
carries the command, the file and the compiler's stderr.
"""

from __future__ import annotations

import enum
import functools
import os
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from aot.diagnostics import Diagnostic, DiagnosticError

#: The warning and language flags every generated translation unit must pass.
STRICT_FLAGS: tuple[str, ...] = ("-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror")
DEFAULT_OPT_FLAGS: tuple[str, ...] = ("-O2",)
#: Optimisation of the host's builds (see the module note).
HOST_OPT_FLAGS: tuple[str, ...] = ("-O3",)
#: The same for gcc.  ``-fno-schedule-insns2``: the out-of-order x86-64 and
#: AArch64 cores gcc compiles for here gain nothing measurable from
#: scheduling after register allocation (``bench/onnx_models.py --config
#: fastest --repeats 3``, twice each, gcc 12.2, Cooper Lake: DS-CNN 0.85 /
#: 0.83-0.85 of onnxruntime's time, ResNet-8 0.93 / 0.93, MobileNetV1 0.25
#: 0.88-0.89 / 0.85-0.88, the autoencoder 0.37-0.39 / 0.36-0.39), and the
#: pass is 5 % of gcc's time on the generated kernels (MobileNetV1's host
#: build 1.40 -> 1.33 CPU-s).  Not given to clang, which has no such pass.
GCC_HOST_OPT_FLAGS: tuple[str, ...] = (*HOST_OPT_FLAGS, "-fno-schedule-insns2")
#: Flags that select the host CPU, tried in order; the first the compiler
#: accepts is used.  ``-ffp-contract=off`` comes with them: the host CPU has a
#: fused multiply-add, which clang (and gcc outside ISO modes) would otherwise
#: use for any ``a * b + c`` of any C it builds, changing its results.
NATIVE_FLAGS: tuple[tuple[str, ...], ...] = (("-march=native", "-ffp-contract=off"),
                                             ("-mcpu=native", "-ffp-contract=off"))
#: Added to gcc's native flags when they enable AVX-512VL.  gcc 12.2's loop
#: vectorizer miscompiles an if-converted conditional load under AVX-512VL:
#: ``out[i] = x[i] < 0 ? x[i] * s[i] : x[i]`` over a 3x4x5 nest (ONNX
#: PRelu), fully unrolled at ``-O3 -march=native``, is vectorised as 16 + 16
#: + 16 + 8 + 4 lanes and gives all five ``.MASK_LOAD``\ s of ``s`` the first
#: vector's mask, so lanes read zero and the output is ``-0.0`` (the
#: ``test_prelu_example`` node test).  Without AVX-512VL the 256- and 128-bit
#: vectors have no mask registers, and that test passes.  The workaround
#: used before, ``-fno-tree-loop-if-convert``, kept every loop with a
#: condition scalar, the fused ReLU/ReLU6 epilogues of the convolutions
#: included: the default host build of MobileNetV1 0.25 took 6.8 times
#: onnxruntime's time instead of 1.2 (issue 16; a 24x24 depthwise layer
#: 128 us instead of 12.6), while ``-mno-avx512vl`` costs 1-4 % against no
#: workaround (the 512-bit AVX-512F vectors stay).
GCC_NATIVE_WORKAROUND_FLAGS: tuple[str, ...] = ("-mno-avx512vl",)
#: The predefined macro that says the flags enable AVX-512VL.
AVX512VL_MACRO = "__AVX512VL__"
PIC_FLAG = "-fPIC"
#: Plain-text diagnostics whatever the terminal, so error messages are stable.
NO_COLOR_FLAG = "-fdiagnostics-color=never"

#: Sanitizers ``AOT_SANITIZE`` may name, in the order their flags are written.
SANITIZERS: tuple[str, ...] = ("address", "undefined")
SANITIZE_ENV = "AOT_SANITIZE"
#: Optimisation of the toolchains ``$AOT_SANITIZE`` makes.
SANITIZE_OPT_FLAGS: tuple[str, ...] = ("-O0",)

#: ``$AOT_HOST_OPT``: the optimisation of the host builds (see the module note).
HOST_OPT_ENV = "AOT_HOST_OPT"
HOST_OPT_CHOICES: tuple[str, ...] = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og")

#: Seconds before a single compiler or archiver run is declared hung.
COMMAND_TIMEOUT_S = 600

INSTALL_HINT = "install one with `bash scripts/install-ci-deps.sh` or set CC"


class CompilerKind(enum.Enum):
    GCC = "gcc"
    CLANG = "clang"

    def __str__(self) -> str:
        return self.value


class BuildError(DiagnosticError):
    """A failed compiler or archiver run (or no compiler at all).

    ``str()`` gives the rendered diagnostic: what failed, the file, the exact
    command (shell-quoted, runnable from ``cwd``) and the tool's stderr.
    """

    def __init__(self, message: str, *, command: Sequence[str] = (),
                 cwd: Path | None = None, path: Path | str | None = None,
                 stderr: str = ""):
        self.command = tuple(command)
        self.cwd = cwd
        self.path = path
        self.stderr = stderr
        lines = [message]
        if path is not None:
            lines.append(f"  file: {path}")
        if self.command:
            lines.append(f"  command: {shlex.join(self.command)}")
        if cwd is not None:
            lines.append(f"  in directory: {cwd}")
        if stderr.strip():
            lines.append("  compiler output:")
            lines.extend("    " + line for line in stderr.rstrip().splitlines())
        super().__init__([Diagnostic("\n".join(lines))])


@dataclass(frozen=True, slots=True)
class Toolchain:
    """One host C compiler and its archiver.

    ``cc`` is the absolute path of the first word of the compiler command and
    ``cc_args`` the remaining words (``CC="ccache gcc"`` gives
    ``cc=/usr/bin/ccache, cc_args=("gcc",)``).  ``opt_flags`` are the
    optimisation flags; change them with :meth:`with_opt_flags`, and the
    host CPU flags with :meth:`with_target_flags`.
    """

    cc: str
    kind: CompilerKind
    version: str
    banner: str
    ar: str
    ar_banner: str
    cc_args: tuple[str, ...] = ()
    opt_flags: tuple[str, ...] = field(default=DEFAULT_OPT_FLAGS)
    sanitizers: tuple[str, ...] = ()
    #: flags selecting a cross target's core and ABI (aot.emit.build.targets)
    target_flags: tuple[str, ...] = ()
    #: position-independent objects (the host's; not bare-metal firmware's)
    pic: bool = True
    #: what ``target_flags`` select when they name the host CPU (``-march=native``):
    #: a digest of the compiler's predefined macros under them ("" otherwise)
    cpu_key: str = ""

    @property
    def command(self) -> tuple[str, ...]:
        """The words that invoke the compiler."""
        return (self.cc, *self.cc_args)

    @property
    def identity(self) -> str:
        """Everything about the tools that can change an object or archive."""
        return "\n".join([self.cc, os.path.realpath(self.cc), *self.cc_args, self.kind.value,
                          self.version, self.banner, self.ar, self.ar_banner, self.cpu_key])

    @property
    def label(self) -> str:
        """Short name for test ids and messages, e.g. ``gcc-12.2.0``."""
        return f"{self.kind.value}-{self.version}"

    @property
    def sanitize_flags(self) -> tuple[str, ...]:
        """Compile and link flags of :attr:`sanitizers` (empty when none)."""
        if not self.sanitizers:
            return ()
        return (f"-fsanitize={','.join(self.sanitizers)}", "-fno-sanitize-recover=all",
                "-fno-omit-frame-pointer", "-g")

    @property
    def codegen_flags(self) -> tuple[str, ...]:
        """The flags that decide the machine code of every object this
        toolchain builds: CPU (with gcc's native workaround), optimisation,
        sanitizers.  The library build and ``aot profile --target host``
        both take them from here."""
        return (*self.target_flags, *self.opt_flags, *self.sanitize_flags)

    def object_flags(self, extra: Sequence[str] = ()) -> tuple[str, ...]:
        """Flags for an object of a generated static library."""
        pic = (PIC_FLAG,) if self.pic else ()
        return (*self.target_flags, *STRICT_FLAGS, *self.opt_flags, *self.sanitize_flags, *pic,
                NO_COLOR_FLAG, *extra)

    def with_opt_flags(self, *flags: str) -> Toolchain:
        return replace(self, opt_flags=tuple(flags))

    def with_target_flags(self, *flags: str) -> Toolchain:
        """This toolchain with ``flags`` selecting the CPU (none: the
        compiler's baseline, e.g. x86-64 without FMA).  Flags naming the host
        CPU (``-march=native``) are probed again for :attr:`cpu_key`."""
        flags = tuple(flags)
        if _names_native(flags) and self.kind is CompilerKind.GCC:
            flags = (*flags, *(f for f in _gcc_workaround_flags(self.command, flags)
                               if f not in flags))
        return replace(self, target_flags=flags,
                       cpu_key=_cpu_key(self.command, flags) if _names_native(flags) else "")

    def with_sanitizers(self, *names: str) -> Toolchain:
        """This toolchain with sanitizers ``names`` (none: plain builds)."""
        return replace(self, sanitizers=_checked_sanitizers(names, what="sanitizer"))


def _checked_sanitizers(names: Sequence[str], *, what: str) -> tuple[str, ...]:
    """``names`` deduplicated in :data:`SANITIZERS` order; a BuildError names
    an unknown one."""
    unknown = [name for name in names if name not in SANITIZERS]
    if unknown:
        raise BuildError(f"unknown {what} `{unknown[0]}`; supported: {', '.join(SANITIZERS)}")
    return tuple(name for name in SANITIZERS if name in names)


def sanitizers_from_env() -> tuple[str, ...]:
    """The sanitizers ``$AOT_SANITIZE`` asks for (comma-separated; unset or
    empty: none)."""
    words = [w.strip() for w in os.environ.get(SANITIZE_ENV, "").split(",")]
    return _checked_sanitizers([w for w in words if w], what=f"sanitizer in ${SANITIZE_ENV}")


def host_opt_from_env() -> tuple[str, ...]:
    """The host optimisation flags ``$AOT_HOST_OPT`` asks for (unset or
    empty: none, :data:`HOST_OPT_FLAGS` apply)."""
    value = os.environ.get(HOST_OPT_ENV, "").strip()
    if not value:
        return ()
    if value not in HOST_OPT_CHOICES:
        raise BuildError(f"unknown optimisation level in ${HOST_OPT_ENV} `{value}`; "
                         f"supported: {', '.join(HOST_OPT_CHOICES)}")
    return (value,)


#: Runtime library of each sanitizer, per compiler kind, as the compiler's
#: ``-print-file-name`` knows it (x86_64 name for clang).
_RUNTIME_NAMES: dict[CompilerKind, dict[str, str]] = {
    CompilerKind.GCC: {"address": "libasan.so", "undefined": "libubsan.so"},
    CompilerKind.CLANG: {"address": "libclang_rt.asan-x86_64.so",
                         "undefined": "libclang_rt.ubsan_standalone-x86_64.so"},
}


def sanitizer_runtimes(toolchain: Toolchain) -> tuple[str, ...]:
    """Absolute paths of the shared runtimes a process must preload
    (``LD_PRELOAD``, in this order) before it loads an extension built with
    ``toolchain``'s sanitizers.  BuildError if the compiler has none."""
    paths = []
    for name in toolchain.sanitizers:
        runtime = _RUNTIME_NAMES[toolchain.kind][name]
        if toolchain.kind is CompilerKind.CLANG and "address" in toolchain.sanitizers \
                and name == "undefined":
            continue  # clang's ASan runtime carries the UBSan handlers
        probe = _run_probe([*toolchain.command, f"-print-file-name={runtime}"])
        found = probe.stdout.strip()
        if probe.returncode != 0 or not os.path.isabs(found) or not os.path.exists(found):
            raise BuildError(f"{toolchain.label} has no {name} sanitizer runtime "
                             f"({runtime} not found)", command=probe.args)
        paths.append(os.path.realpath(found))
    return tuple(paths)


def _run_probe(command: Sequence[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(command), input=stdin, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
    except OSError as exc:
        raise BuildError(f"cannot run `{command[0]}`: {exc.strerror}", command=command) from None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""


def _predefined_macros(command: Sequence[str]) -> dict[str, str]:
    probe = [*command, "-dM", "-E", "-x", "c", "-"]
    result = _run_probe(probe)
    if result.returncode != 0:
        raise BuildError(f"`{shlex.join(command)}` does not behave like a C compiler "
                         "(`-dM -E` failed)", command=probe, stderr=result.stderr)
    macros: dict[str, str] = {}
    for line in result.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == "#define":
            macros[parts[1]] = parts[2] if len(parts) == 3 else ""
    return macros


def _kind_and_version(command: Sequence[str]) -> tuple[CompilerKind, str]:
    macros = _predefined_macros(command)
    if "__clang__" in macros:
        version = ".".join(macros.get(m, "0") for m in
                           ("__clang_major__", "__clang_minor__", "__clang_patchlevel__"))
        return CompilerKind.CLANG, version
    if "__GNUC__" in macros:
        version = ".".join(macros.get(m, "0") for m in
                           ("__GNUC__", "__GNUC_MINOR__", "__GNUC_PATCHLEVEL__"))
        return CompilerKind.GCC, version
    raise BuildError(f"unsupported C compiler `{shlex.join(command)}`: "
                     "only gcc and clang (or compatible drivers) are supported",
                     command=command)


def _resolve(word: str) -> str | None:
    """Absolute path of command ``word``, symlinks kept: drivers such as
    clang change behaviour with the name they are invoked by."""
    found = shutil.which(word)
    return os.path.abspath(found) if found else None


def run_probe_banner(tool: str) -> str:
    """The first line of ``tool --version``."""
    return _first_line(_run_probe([tool, "--version"]).stdout)


def _find_ar() -> tuple[str, str]:
    candidates = [os.environ["AR"]] if os.environ.get("AR") else ["ar", "llvm-ar"]
    for word in candidates:
        path = _resolve(word)
        if path is not None:
            banner = _first_line(_run_probe([path, "--version"]).stdout)
            return path, banner
    raise BuildError(f"no archiver found (tried {', '.join(candidates)}); "
                     "install binutils or set AR")


def _names_native(flags: Sequence[str]) -> bool:
    return any(flag.endswith("=native") for flag in flags)


def _cpu_key(command: Sequence[str], flags: Sequence[str]) -> str:
    """A digest of the predefined macros ``flags`` give (``__AVX2__``,
    ``__FMA__``, ``__ARM_FEATURE_FMA``, ...): what ``native`` resolved to."""
    import hashlib
    macros = _predefined_macros([*command, *flags])
    text = "\n".join(f"{k} {v}" for k, v in sorted(macros.items()))
    return " ".join(flags) + " " + hashlib.sha256(text.encode()).hexdigest()[:32]


def _native_flags(command: Sequence[str]) -> tuple[str, ...]:
    """The first of :data:`NATIVE_FLAGS` the compiler accepts, or none."""
    for flags in NATIVE_FLAGS:
        probe = _run_probe([*command, *flags, "-Werror", "-x", "c", "-S", "-o", os.devnull, "-"],
                           stdin="int aot_probe;\n")
        if probe.returncode == 0:
            return flags
    return ()


def _gcc_workaround_flags(command: Sequence[str], flags: Sequence[str]) -> tuple[str, ...]:
    """:data:`GCC_NATIVE_WORKAROUND_FLAGS` if gcc under ``flags`` targets
    AVX-512VL (the miscompile needs its mask registers), else none."""
    if AVX512VL_MACRO in _predefined_macros([*command, *flags]):
        return GCC_NATIVE_WORKAROUND_FLAGS
    return ()


@functools.lru_cache(maxsize=None)
def _probe_cached(command: tuple[str, ...], mtime_ns: int) -> Toolchain:
    del mtime_ns  # part of the cache key only: a replaced compiler is re-probed
    kind, version = _kind_and_version(command)
    banner = _first_line(_run_probe([*command, "--version"]).stdout)
    ar, ar_banner = _find_ar()
    native = _native_flags(command)
    if native and kind is CompilerKind.GCC:
        native = (*native, *_gcc_workaround_flags(command, native))
    return Toolchain(cc=command[0], cc_args=command[1:], kind=kind, version=version,
                     banner=banner, ar=ar, ar_banner=ar_banner,
                     opt_flags=GCC_HOST_OPT_FLAGS if kind is CompilerKind.GCC else HOST_OPT_FLAGS,
                     target_flags=native,
                     cpu_key=_cpu_key(command, native) if native else "")


def probe_toolchain(cc: str | Sequence[str]) -> Toolchain:
    """The toolchain for compiler command ``cc`` (a word, a shell-style
    string with arguments, or a list of words)."""
    words = shlex.split(cc) if isinstance(cc, str) else list(cc)
    if not words:
        raise BuildError("empty C compiler command")
    path = _resolve(words[0])
    if path is None:
        raise BuildError(f"C compiler `{words[0]}` not found; {INSTALL_HINT}")
    probed = _probe_cached((path, *words[1:]), os.stat(path).st_mtime_ns)
    host_opt = host_opt_from_env()
    if host_opt:
        probed = replace(probed, opt_flags=host_opt)
    sanitizers = sanitizers_from_env()
    if not sanitizers:
        return probed
    return replace(probed, sanitizers=sanitizers, opt_flags=SANITIZE_OPT_FLAGS)


_SEARCH_ORDER: dict[CompilerKind | None, tuple[str, ...]] = {
    None: ("gcc", "clang", "cc"),
    CompilerKind.GCC: ("gcc", "cc"),
    CompilerKind.CLANG: ("clang", "cc"),
}


def find_toolchain(kind: CompilerKind | str | None = None) -> Toolchain:
    """The C toolchain to use.

    With no ``kind``: ``$CC`` when set (an error if it does not work), else
    the first of gcc, clang, cc on ``PATH``.  With a kind: the first compiler
    of that kind among ``$CC``, then the usual names.
    """
    if isinstance(kind, str):
        kind = CompilerKind(kind)
    sanitizers_from_env()  # a bad $AOT_SANITIZE is its own error, not "no compiler"
    host_opt_from_env()    # and so is a bad $AOT_HOST_OPT
    env_cc = os.environ.get("CC", "").strip()
    if kind is None and env_cc:
        return probe_toolchain(env_cc)
    names = ([env_cc] if env_cc else []) + list(_SEARCH_ORDER[kind])
    for name in names:
        try:
            toolchain = probe_toolchain(name)
        except BuildError:
            continue
        if kind is None or toolchain.kind is kind:
            return toolchain
    what = f"{kind.value} C compiler" if kind is not None else "C compiler"
    raise BuildError(f"no {what} found (tried {', '.join(names)}); {INSTALL_HINT}")


def available_toolchains() -> tuple[Toolchain, ...]:
    """One toolchain per compiler kind found on this machine, gcc first."""
    found = []
    for kind in CompilerKind:
        try:
            found.append(find_toolchain(kind))
        except BuildError:
            continue
    return tuple(found)


def run_tool(command: Sequence[str], *, cwd: Path, what: str,
             path: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a compiler or archiver; raise :class:`BuildError` on failure."""
    try:
        # its own session, so a timeout kills the driver's children (cc1,
        # as) too instead of leaving them running
        proc = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        raise BuildError(f"cannot run {what}: {exc.strerror}", command=command,
                         cwd=cwd, path=path) from None
    try:
        stdout, stderr = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise BuildError(f"{what} timed out after {COMMAND_TIMEOUT_S} s",
                         command=command, cwd=cwd, path=path) from None
    result = subprocess.CompletedProcess(list(command), proc.returncode, stdout, stderr)
    if result.returncode != 0:
        raise BuildError(f"{what} failed (exit status {result.returncode})",
                         command=command, cwd=cwd, path=path,
                         stderr=result.stderr + result.stdout)
    return result
