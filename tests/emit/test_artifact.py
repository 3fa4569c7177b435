"""Rendering a ModelPlan into an artifact: layout, metadata, header
macros, constants' spelling, determinism, plan validation, resources."""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import replace

import jinja2
import numpy as np
import pytest

from aot.diagnostics import DiagnosticError
from aot.emit.build import artifact as artifact_module
from aot.emit.kernel import ir as K
from aot.emit.build.artifact import (Artifact, TemplateRenderError, open_artifact, render_artifact,
                                     write_artifact)
from aot.emit.build.library import ArtifactLayout
from aot.emit.plan.model import STATUS_CODES, ArgKind, BufferRef, ConstantData, KernelCall
from aot.emit.plan.verify import verify_model_plan
from aot.emit.c.context import (BUILD_FLAGS, constant_literals, float_literal,
                                entry_prototype)
from aot.emit.resources import runtime_dir, templates_dir
from aot.ir.dtype import DType
from artifact_plans import (EDGE_CONSTANTS, addscale_plan, constants_plan, half_bool_plan,
                            tuple_plan)

PLANS = {
    "addscale": lambda: addscale_plan(),
    "static": lambda: addscale_plan("stat", "static"),
    "tuples": lambda: tuple_plan(),
    "halfbool": lambda: half_bool_plan(),
    "consts": lambda: constants_plan(),
}

CONTRACT_KEYS = {"version", "name", "inputs", "outputs", "arena_bytes",
                 "arena_lower_bound_bytes", "pool_bytes", "constant_bytes", "kernels"}


# ------------------------------------------------------------------ layout

@pytest.mark.parametrize("which", sorted(PLANS))
def test_layout_contract(tmp_path, which):
    plan = PLANS[which]()
    art = write_artifact(plan, tmp_path / "out")
    layout = ArtifactLayout(tmp_path / "out", plan.name)
    assert art == Artifact(layout.root.resolve(), plan.name, {})
    files = sorted(p.relative_to(art.root).as_posix() for p in art.root.rglob("*")
                   if p.is_file())
    assert files == sorted([f"include/{plan.name}.h", f"src/{plan.name}.c",
                            f"{plan.name}.mk", "metadata.json",
                            "runtime_c/aot_kernel_helpers.h", "tools/aot_stack.py"])
    assert (art.root / "runtime_c/aot_kernel_helpers.h").read_bytes() == \
        (runtime_dir() / "aot_kernel_helpers.h").read_bytes()


@pytest.mark.parametrize("which", sorted(PLANS))
def test_metadata_keys_and_values(tmp_path, which):
    plan = PLANS[which]()
    art = write_artifact(plan, tmp_path)
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta == art.metadata
    assert CONTRACT_KEYS <= set(meta)
    assert {"entry", "arena", "arena_align", "output_tree", "status_codes", "constants",
            "helpers", "files", "c_flags"} <= set(meta)
    assert meta["name"] == plan.name and meta["version"] == 1
    for key, specs in (("inputs", plan.inputs), ("outputs", plan.outputs)):
        assert [(t["name"], t["shape"], t["dtype"]) for t in meta[key]] == \
            [(s.name, list(s.shape), s.dtype.value) for s in specs]
    assert meta["arena_bytes"] == plan.arena_bytes
    assert meta["arena_lower_bound_bytes"] == plan.arena_lower_bound_bytes
    assert meta["pool_bytes"] == plan.pool_bytes
    assert meta["constant_bytes"] == plan.constant_bytes == \
        sum(c.values.size * c.dtype.itemsize for c in plan.constants)
    assert meta["kernels"] == [{"name": i.name, "source": i.source, "ops": list(i.ops),
                                "anchor": i.anchor, "nodes": list(i.nodes)}
                               for i in plan.kernel_info]
    assert meta["calls"] == [{"kernel": c.kernel, "nodes": list(c.nodes)} for c in plan.calls]
    assert meta["arena"] == plan.arena
    assert meta["entry"]["name"] == f"{plan.name}_run"
    assert meta["entry"]["prototype"] == entry_prototype(plan) + ";"
    assert [(s["name"], s["value"]) for s in meta["status_codes"]] == \
        [(n, v) for n, v, _ in STATUS_CODES]
    assert set(BUILD_FLAGS) <= set(meta["c_flags"])
    tree = json.loads(json.dumps(plan.output_tree))
    assert meta["output_tree"] == tree


def test_metadata_json_is_sorted_and_indented(tmp_path):
    write_artifact(addscale_plan(), tmp_path)
    text = (tmp_path / "metadata.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert data["extra"] == {"memory_planner": "hand", "note": ["a", 1]}


def test_open_artifact_reads_back_the_metadata(tmp_path):
    art = write_artifact(tuple_plan(), tmp_path)
    again = open_artifact(tmp_path)
    assert again == art and again.metadata == art.metadata


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"), ("{", "not valid JSON"), ("[1]", "no model name")])
def test_open_artifact_errors_are_diagnostics(tmp_path, content, message):
    if content is not None:
        (tmp_path / "metadata.json").write_text(content)
    with pytest.raises(DiagnosticError, match=message):
        open_artifact(tmp_path)


# ----------------------------------------------------------- determinism

@pytest.mark.parametrize("which", sorted(PLANS))
def test_rendering_is_byte_identical(tmp_path, which):
    first = write_artifact(PLANS[which](), tmp_path / "a")
    second = write_artifact(PLANS[which](), tmp_path / "b")   # a fresh plan object
    for path in sorted(first.root.rglob("*")):
        if path.is_file():
            twin = second.root / path.relative_to(first.root)
            assert path.read_bytes() == twin.read_bytes(), path
    assert render_artifact(PLANS[which]()) == render_artifact(PLANS[which]())


def test_compiled_templates_come_from_the_cache_and_render_the_same(tmp_path, monkeypatch):
    """The templates compiled once are kept in the build cache (section
    ``templates``); a fresh environment renders from them, and from
    damaged entries (it compiles again), byte for byte the same."""
    from aot.emit.build import cache

    monkeypatch.setenv("AOT_CACHE_DIR", str(tmp_path / "cache"))
    artifact_module._environment.cache_clear()
    try:
        first = render_artifact(addscale_plan())
        entries = sorted((tmp_path / "cache" / "templates").rglob("*.jinja"))
        assert len(entries) == len(artifact_module.TEMPLATES)
        assert {e.path for e in cache.entries(cache.cache_root())} >= set(entries)
        compiled: list[str] = []
        compile_ = jinja2.Environment.compile
        monkeypatch.setattr(jinja2.Environment, "compile", lambda self, source, name=None,
                            *args, **kw: compiled.append(name) or compile_(self, source, name,
                                                                          *args, **kw))
        artifact_module._environment.cache_clear()
        assert render_artifact(addscale_plan()) == first and compiled == []
        for entry in entries:
            entry.write_bytes(b"not a template")
        artifact_module._environment.cache_clear()
        assert render_artifact(addscale_plan()) == first
        assert len(compiled) == len(entries)
        assert all(e.read_bytes() != b"not a template" for e in entries)   # written again
    finally:
        artifact_module._environment.cache_clear()


def test_rewriting_an_unchanged_artifact_touches_nothing(tmp_path):
    write_artifact(addscale_plan(), tmp_path)
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    write_artifact(addscale_plan(), tmp_path)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == stamps


def test_rewriting_removes_stale_sources_and_an_old_model(tmp_path):
    write_artifact(addscale_plan("old"), tmp_path)
    (tmp_path / "src" / "leftover.c").write_text("int x;\n")
    write_artifact(addscale_plan("new"), tmp_path)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                   if p.is_file())
    assert files == ["include/new.h", "metadata.json", "new.mk",
                     "runtime_c/aot_kernel_helpers.h", "src/new.c", "tools/aot_stack.py"]


# ------------------------------------------------------------------ header

def _header(plan) -> str:
    return render_artifact(plan)[f"include/{plan.name}.h"]


def _macros(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in
            re.finditer(r"^#define (\w+) ([^/\n]*)", text, re.M)}


def test_header_defines_the_contract_macros():
    plan = tuple_plan()
    macros = _macros(_header(plan))
    for suffix, value, _ in STATUS_CODES:
        assert macros[f"TUPLES_{suffix}"] == str(value)
    assert macros["TUPLES_ARENA_BYTES"] == "16"
    assert macros["TUPLES_ARENA_ALIGN"] == "16"
    assert macros["TUPLES_POOL_BYTES"] == "0"
    assert macros["TUPLES_CONSTANT_BYTES"] == "0"
    assert macros["TUPLES_NUM_INPUTS"] == "2" and macros["TUPLES_NUM_OUTPUTS"] == "3"
    assert macros["TUPLES_INPUT_0_SIZE"] == "4" and macros["TUPLES_INPUT_0_NDIM"] == "1"
    assert macros["TUPLES_INPUT_0_DIM_0"] == "4" and macros["TUPLES_INPUT_0_BYTES"] == "16"
    assert macros["TUPLES_INPUT_1_SIZE"] == "1" and macros["TUPLES_INPUT_1_NDIM"] == "0"
    assert "TUPLES_INPUT_1_DIM_0" not in macros
    assert macros["TUPLES_OUTPUT_2_SIZE"] == "4" and macros["TUPLES_OUTPUT_2_BYTES"] == "4"


def test_header_declares_the_entry_and_names_the_tensors():
    text = _header(addscale_plan())
    assert "int32_t addscale_run(const float *x, const float *y, float *out, void *arena);" \
        in text
    assert "input 0 `x` (program name %x): float32[2][3]" in text
    assert text.startswith("/*") and "#ifndef ADDSCALE_H_INCLUDED" in text
    assert text.rstrip().endswith("#endif /* ADDSCALE_H_INCLUDED */")
    assert "#include <stdint.h>" in text
    static = _header(addscale_plan("stat", "static"))
    assert "int32_t stat_run(const float *x, const float *y, float *out);" in static
    assert "not reentrant" in static


def test_header_types_bool_and_float16_as_storage():
    text = _header(half_bool_plan())
    flat = " ".join(text.split())
    assert "int32_t halfbool_run(const uint16_t *h, const uint8_t *m, uint16_t *out0, " \
           "uint8_t *out1, void *arena);" in flat
    assert "The result is the tuple (out0, out1)." in flat


def test_long_prototypes_wrap():
    text = _header(constants_plan())
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("int32_t consts_run("))
    end = next(i for i in range(start, len(lines)) if lines[i].endswith(");"))
    assert end > start and all(len(line) <= 100 for line in lines[start:end + 1])


# ------------------------------------------------------------------ source

def test_source_shape():
    text = render_artifact(addscale_plan())["src/addscale.c"]
    assert '#include "addscale.h"' in text and '#include "aot_kernel_helpers.h"' in text
    assert "static const union {\n    uint32_t bits[6];\n    float values[6];\n" \
        "} addscale_c0_bits = {{\n" in text
    assert "#define addscale_c0 (addscale_c0_bits.values)" in text
    assert "static void addscale_k0(" in text and "static void addscale_k1(" in text
    # each kernel is preceded by the comment naming the IR it came from
    assert re.search(r"/\*\n \* addscale_k0: from\n \*     %0 = add\(%x, %y\).*?\*/\n"
                     r"static void addscale_k0\(", text, re.S)
    # the nested comment in the IR text is defused
    assert "maximum(%1, %0) / * max * /" in text
    assert "if (x == NULL || y == NULL || out == NULL || arena == NULL) {" in text
    assert "return ADDSCALE_ERR_NULL;" in text and "return ADDSCALE_OK;" in text
    assert "addscale_k0(x, y, (float *)((unsigned char *)arena + 16));" in text
    assert "aot_max_f32" in text.split("*/", 1)[0]          # the helpers note


def test_static_arena_is_an_aligned_union_in_a_context():
    """--arena static: the arena is an aligned union inside the context
    type of the header; <name>_run_ctx works on the caller's context and
    <name>_run on a static one."""
    files = render_artifact(addscale_plan("stat", "static"))
    text, header = files["src/stat.c"], files["include/stat.h"]
    assert re.search(r"typedef struct stat_ctx \{\n    union \{\n        unsigned char bytes\[48\];"
                     r"\n        uint64_t .*?long double .*?void \*.*?\} arena;\n\} stat_ctx;",
                     header, re.S)
    assert "#define STAT_CTX_BYTES (sizeof(stat_ctx))" in header
    assert "void stat_ctx_init(stat_ctx *context);" in header
    assert "int32_t stat_run_ctx(stat_ctx *context, const float *x, const float *y, " \
        "float *out);" in header
    assert "int32_t stat_run(const float *x, const float *y, float *out);" in header
    assert "(float *)(context->arena.bytes + 16)" in text
    assert "if (context == NULL || x == NULL || y == NULL || out == NULL) {" in text
    assert "static stat_ctx stat_static;" in text
    assert "return stat_run_ctx(&stat_static, x, y, out);" in text
    assert "arena == NULL" not in text


def test_no_arena_no_helpers():
    text = render_artifact(constants_plan(values={DType.INT8: np.array([1, 2], np.int8)}))[
        "src/consts.c"]
    assert "(void)arena;" in text and "arena ==" not in text
    assert "aot_kernel_helpers.h" not in text and "Uses no runtime helper." in text
    static = replace(half_bool_plan(), arena="static")
    assert "union" not in render_artifact(static)["src/halfbool.c"]   # arena_bytes == 0


def test_empty_constant_gets_one_padding_element():
    plan = constants_plan(values={DType.FLOAT32: np.zeros(0, np.float32)})
    text = render_artifact(plan)["src/consts.c"]
    assert "float values[1];\n} consts_c_float32_bits = {{\n    0\n}};" in text
    assert "one padding element" in text


def test_makefile_fragment_variables():
    text = render_artifact(addscale_plan())["addscale.mk"]
    assert "ADDSCALE_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))" in text
    assert "ADDSCALE_SRCS := $(ADDSCALE_DIR)/src/addscale.c\n" in text
    assert "ADDSCALE_INCLUDES := -I$(ADDSCALE_DIR)/include -I$(ADDSCALE_DIR)/runtime_c" in text
    cflags = re.search(r"^ADDSCALE_CFLAGS := (.*)$", text, re.M).group(1).split()
    assert "-std=c99" in cflags and "-ffp-contract=off" in cflags
    assert "ADDSCALE_LIB := $(ADDSCALE_DIR)/lib/libaddscale.a" in text
    assert "FMA" in text   # the comment says why -ffp-contract=off
    assert ("ADDSCALE_HEADERS := $(ADDSCALE_DIR)/include/addscale.h\n"
            "ADDSCALE_HEADERS += $(ADDSCALE_DIR)/runtime_c/aot_kernel_helpers.h\n") in text
    plan = addscale_plan()
    for var, value in (("ARENA_BYTES", plan.arena_bytes), ("ARENA_ALIGN", 16),
                       ("POOL_BYTES", plan.pool_bytes), ("CONSTANT_BYTES", plan.constant_bytes)):
        assert f"\nADDSCALE_{var} := {value}\n" in text, var


def test_large_tables_integer_form_is_a_file_beside_the_source():
    """The string form in the source; the integers in src/<name>_tables.inc,
    included only where the string form is not compiled, listed in the
    fragment's HEADERS; small tables stay whole in the source."""
    big = np.arange(300, dtype=np.float32)
    files = render_artifact(constants_plan(values={DType.FLOAT32: big,
                                                   DType.INT8: np.array([1, 2], np.int8)}))
    source, tables = files["src/consts.c"], files["src/consts_tables.inc"]
    assert "unsigned char bytes[1200]" in source and "uint32_t bits[300]" not in source
    assert "uint32_t bits[300]" in tables and "unsigned char" not in tables
    assert "#if !CONSTS_TABLES_AS_BYTES\n#include \"consts_tables.inc\"\n#endif\n" in source
    assert source.index("consts_tables.inc") < source.index("static void")
    assert "consts_c_int8[2] = {" in source and "consts_c_int8" not in tables
    assert "CONSTS_HEADERS += $(CONSTS_DIR)/src/consts_tables.inc\n" in files["consts.mk"]
    assert not any(p.endswith("_tables.inc") for p in render_artifact(addscale_plan()))


def test_generated_lines_are_not_too_long():
    for plan in (constants_plan(), addscale_plan(), tuple_plan()):
        for path, text in render_artifact(plan).items():
            if path.startswith(("src/", "include/")) or path.endswith(".mk"):
                assert isinstance(text, str)
                long = [line for line in text.splitlines() if len(line) > 100]
                assert not long, (path, long)


# --------------------------------------------------------------- literals

@pytest.mark.parametrize("value, dtype, text", [
    (0.0, DType.FLOAT32, "0x0p+0f"), (-0.0, DType.FLOAT32, "-0x0p+0f"),
    (1.5, DType.FLOAT32, "0x1.8p+0f"), (0.1, DType.FLOAT64, "0x1.999999999999ap-4"),
    (float(np.float32(0.1)), DType.FLOAT32, "0x1.99999ap-4f"),
    (2.0 ** -149, DType.FLOAT32, "0x1p-149f"), (5e-324, DType.FLOAT64, "0x0.0000000000001p-1022"),
    (float("inf"), DType.FLOAT32, "AOT_INF_F32"), (float("-inf"), DType.FLOAT64, "-AOT_INF_F64"),
    (float("nan"), DType.FLOAT64, "AOT_NAN_F64"), (-float("nan"), DType.FLOAT32, "-AOT_NAN_F32"),
])
def test_float_literals(value, dtype, text):
    assert float_literal(value, dtype) == text


def test_hex_literals_parse_back_exactly():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2 ** 32, size=2000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = values[np.isfinite(values)]
    for v, text in zip(values, constant_literals(DType.FLOAT32, values)):
        assert np.float32(float.fromhex(text.rstrip("f"))).view(np.uint32) == \
            np.float32(v).view(np.uint32), text


@pytest.mark.parametrize("dtype, expected", [
    (DType.INT32, ["(-2147483647 - 1)", "-2147483647", "-1", "0", "2147483647"]),
    (DType.INT64, ["(-INT64_C(9223372036854775807) - 1)", "-INT64_C(9223372036854775807)",
                   "-INT64_C(1)", "INT64_C(0)", "INT64_C(2147483648)",
                   "INT64_C(9223372036854775807)"]),
    (DType.UINT64, ["UINT64_C(0)", "UINT64_C(9223372036854775808)",
                    "UINT64_C(18446744073709551615)"]),
    (DType.UINT32, ["0u", "2147483648u", "4294967295u"]),
    (DType.BOOL, ["1", "0", "0", "1", "1"]),
    (DType.FLOAT16, ["0x0000", "0x8000", "0x3c00", "0xc000", "0x7bff", "0xfbff", "0x03ff",
                     "0x0001", "0x83ff", "0x7c01", "0xfe00", "0x7c00", "0xfc00", "0x2e66"]),
])
def test_constant_literals(dtype, expected):
    assert constant_literals(dtype, EDGE_CONSTANTS[dtype]) == expected


# --------------------------------------------------------------- validation

def test_bad_model_names_are_diagnostics():
    for name in ("9lives", "my-model", "_hidden"):
        with pytest.raises(DiagnosticError, match="invalid model name"):
            render_artifact(replace(addscale_plan(), name=name))


def _broken(**changes):
    return replace(addscale_plan(), **changes)


@pytest.mark.parametrize("plan, message", [
    (lambda: _broken(arena="heap"), "arena mode"),
    (lambda: _broken(kernel_info=addscale_plan().kernel_info[:1]), "differ in length"),
    (lambda: _broken(calls=addscale_plan().calls[:1]), "never called"),
    (lambda: _broken(calls=addscale_plan().calls[:1] + (
        KernelCall("addscale_k9", ()),)), "unknown kernel"),
    (lambda: _broken(calls=(addscale_plan().calls[0], KernelCall(
        "addscale_k1", addscale_plan().calls[1].args[:2]))), "takes 3 arguments"),
    (lambda: _broken(arena_bytes=20), "outside the 20-byte arena"),
    (lambda: _broken(output_tree=(0, 0)), "output_tree"),
    (lambda: _broken(constants=()), "no constant"),
    (lambda: _broken(constants=addscale_plan().constants + (
        ConstantData("c9", DType.INT8, np.array([1], np.int8)),)), "never used"),
    (lambda: _broken(inputs=(replace(addscale_plan().inputs[0], name="arena"),
                             addscale_plan().inputs[1])), "collides"),
    (lambda: _broken(inputs=(replace(addscale_plan().inputs[0], dtype=DType.INT32),
                             addscale_plan().inputs[1])), "does not match input"),
])
def test_inconsistent_plans_are_bugs(plan, message):
    with pytest.raises(AssertionError, match=message):
        verify_model_plan(plan())


def test_a_kernel_writing_an_input_is_rejected():
    plan = addscale_plan()
    k0 = plan.calls[0]
    bad = KernelCall(k0.kernel, k0.args[:2] + (BufferRef(ArgKind.INPUT, DType.FLOAT32, 6,
                                                          index=0),))
    with pytest.raises(AssertionError, match="writes into input"):
        verify_model_plan(replace(plan, calls=(bad,) + plan.calls[1:]))


def test_overlapping_restrict_arena_arguments_are_rejected():
    plan = addscale_plan()
    k1 = plan.calls[1]
    # k0 reads nothing from the arena; make k1 write where it reads
    bad = KernelCall(k1.kernel, (k1.args[0], k1.args[1],
                                 BufferRef(ArgKind.ARENA, DType.FLOAT32, 6, offset=16)))
    fixed_outputs = replace(plan, calls=(plan.calls[0], bad))
    with pytest.raises(AssertionError, match="overlapping"):
        verify_model_plan(fixed_outputs)


# ---------------------------------------------------------------- templates

def test_resources_are_found():
    assert (templates_dir() / "model.c.j2").is_file()
    assert {p.name for p in templates_dir().glob("*.j2")} == \
        {"model.h.j2", "model.c.j2", "model.mk.j2"}
    assert (runtime_dir() / "aot_kernel_helpers.h").is_file()


def test_template_errors_are_wrapped(tmp_path, monkeypatch):
    for name in ("model.h.j2", "model.mk.j2"):
        shutil.copy(templates_dir() / name, tmp_path / name)
    (tmp_path / "model.c.j2").write_text("line one\n{{ no_such_field }}\n")
    monkeypatch.setattr(artifact_module, "templates_dir", lambda: tmp_path)
    with pytest.raises(TemplateRenderError, match=r"model\.c\.j2:2: UndefinedError"):
        render_artifact(addscale_plan())


def test_templates_compute_nothing():
    """Skeletons only: no arithmetic, filters or calls in the templates."""
    for path in templates_dir().glob("*.j2"):
        text = path.read_text()
        for expr in re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", text, re.S):
            code = "".join(expr)
            assert "|" not in code and "(" not in code, (path.name, code)
            assert not re.search(r"[+*/%]|\s-\s", code), (path.name, code)


def test_kernel_comment_field_is_still_printed():
    plan = addscale_plan()
    k0 = plan.kernels[0]
    commented = K.Kernel(k0.name, k0.params, k0.body, "hand-written note")
    text = render_artifact(replace(plan, kernels=(commented,) + plan.kernels[1:]))[
        "src/addscale.c"]
    assert "/* hand-written note */\nstatic void addscale_k0(" in text


def test_non_ascii_and_trigraphs_in_ir_text_stay_out_of_the_c():
    plan = addscale_plan()
    info = replace(plan.kernel_info[0], source="%x ??/ caf\u00e9 */")
    text = render_artifact(replace(plan, kernel_info=(info,) + plan.kernel_info[1:]))[
        "src/addscale.c"]
    assert text.isascii() and "??" not in text
    assert "caf<U+00E9> * /" in text



def test_plans_of_the_driver_are_verified(monkeypatch):
    """aot.compiler.plan runs verify_model_plan on every plan it makes."""
    import aot
    from aot import compiler
    from aot.emit.plan import verify

    seen = []
    monkeypatch.setattr(verify, "verify_model_plan", seen.append)
    mod = aot.parse("def @main(%x: Tensor[(2,), float32]) { add(%x, %x) }")
    plan = compiler.plan(mod, "twice")
    assert seen == [plan]


# ------------------------------------------------------- all or nothing

def _compile(out, **kw):
    import aot
    mod = aot.parse("def @main(%x: Tensor[(4,), float32]) { %x * 2f }")
    return aot.compile(mod, out, name="twice", **kw)


def test_a_failed_build_leaves_the_output_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _compile(out, build=False)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(artifact_module, "build_and_measure", fail)
    with pytest.raises(OSError):
        _compile(out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]      # no staging left


def test_a_failed_first_build_leaves_nothing(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(artifact_module, "build_and_measure", fail)
    with pytest.raises(OSError):
        _compile(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_unchanged_files_keep_their_times_across_compiles(tmp_path):
    """A firmware make that depends on the sources rebuilds nothing when
    the compile changed nothing."""
    out = tmp_path / "out"
    _compile(out, build=False)
    header = out / "include" / "twice.h"
    stamp = header.stat().st_mtime_ns - 10**9
    os.utime(header, ns=(stamp, stamp))
    art = _compile(out, build=False)
    assert art.root == out.resolve()
    assert header.stat().st_mtime_ns == stamp
