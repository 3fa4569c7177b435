"""The pass manager: registry, contexts, instruments, verification, CLI."""

from __future__ import annotations


import numpy as np
import pytest

import aot
from aot import builder
from aot.cli import main as cli_main
from aot.diagnostics import DiagnosticError
from aot.ir.expr import Function, Let, Var
from aot.ir.module import IRModule
from aot.passes import manager
from aot.passes.manager import (DumpIR, PassContext, PassTiming, PassVerificationError,
                                Sequential, current, get_pass, register_pass, run_pass)
from aot.passes.pipelines import DATAFLOW, GRAPH_FORM, PROGRAM

SRC = """
def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  %0 = add(%x, 1f);
  %1 = multiply(%0, 2f);
  nn.relu(%1)
}
"""


@pytest.fixture
def scratch_passes():
    """Register test passes; remove them afterwards."""
    with manager.PASSES.scratch():
        yield


def typed() -> IRModule:
    return aot.infer_types(aot.parse(SRC))


def test_every_pipeline_name_is_registered():
    for seq in (GRAPH_FORM, DATAFLOW, PROGRAM):
        for name in seq.names:
            assert get_pass(name).name == name


def test_passes_declare_levels_and_docs():
    for p in manager.all_passes():
        assert 0 <= p.opt_level <= manager.MAX_OPT_LEVEL + 1, p
        assert p.doc, f"pass {p.name} has no doc"


@pytest.mark.parametrize("level, expected", [
    (0, ["SimplifyInference", "FuseOps"]),
    (1, ["SimplifyInference", "FoldConstant", "FuseOps"]),
])
def test_opt_level_selects_passes(level, expected):
    names = [p.name for p in DATAFLOW.passes(PassContext(opt_level=level))]
    assert [n for n in names if n in ("SimplifyInference", "FoldConstant", "FoldScaleAxis",
                                      "FuseOps")] == expected
    assert all(get_pass(n).opt_level <= level for n in names)


def test_disabled_and_required():
    ctx = PassContext(opt_level=3, disabled=["FoldConstant"])
    assert "FoldConstant" not in [p.name for p in DATAFLOW.passes(ctx)]
    ctx = PassContext(opt_level=0, required=["FoldScaleAxis"])
    assert "FoldScaleAxis" in [p.name for p in DATAFLOW.passes(ctx)]


@pytest.mark.parametrize("kwargs, message", [
    ({"disabled": ["NoSuchPass"]}, "unknown pass 'NoSuchPass'"),
    ({"required": ["FoldConstantt"]}, "unknown pass 'FoldConstantt'"),
    ({"required": ["FuseOps"], "disabled": ["FuseOps"]}, "both required and disabled"),
    ({"opt_level": 7}, "opt_level must be 0..3"),
])
def test_context_errors(kwargs, message):
    with pytest.raises(DiagnosticError, match=message):
        PassContext(**kwargs)


@pytest.mark.parametrize("options, message", [
    ({"FuseOps": {"max_depth": "deep"}}, "must be int or None, not str"),
    ({"FuseOps": {"max_dept": 3}}, "has no option 'max_dept'"),
    ({"EliminateCommonSubexpr": {"x": 1}}, "takes no options"),
    ({"FuseOps": {"max_depth": True}}, "must be int or None, not bool"),
])
def test_option_errors(options, message):
    ctx = PassContext(options=options)
    with pytest.raises(DiagnosticError, match=message):
        run_pass(next(iter(options)), typed(), ctx)


def test_options_reach_the_pass():
    mod = typed()
    one = run_pass("FuseOps", mod, PassContext(options={"FuseOps": {"max_depth": 1}}))
    fused = run_pass("FuseOps", mod, PassContext())
    from aot.passes.fuse_ops import primitive_groups
    assert len(primitive_groups(one["main"])) == 3
    assert len(primitive_groups(fused["main"])) == 1


def test_contexts_nest():
    assert current().opt_level == 3
    with PassContext(opt_level=1) as outer:
        assert current() is outer
        with PassContext(opt_level=0) as inner:
            assert current() is inner
        assert current() is outer
    assert current().opt_level == 3


def test_timing_and_dump_instruments(tmp_path):
    timing, dump = PassTiming(), DumpIR(tmp_path)
    with PassContext(instruments=[timing, dump]):
        GRAPH_FORM(aot.parse(SRC))
    assert list(timing.runs) == ["InferType", "ToGraphNormalForm"]
    assert "total" in timing.render()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["00_input.relay", "01_InferType.relay", "02_ToGraphNormalForm.relay"]
    # each dump is parseable Relay text of the module at that point
    aot.parse((tmp_path / "02_ToGraphNormalForm.relay").read_text())


def test_verify_catches_an_ill_formed_result(scratch_passes):
    @register_pass("_BreakScope", opt_level=0)
    def _break(mod: IRModule) -> IRModule:
        """Binds a variable twice."""
        out = mod.copy()
        fn = mod["main"]
        v = fn.params[0]
        out.functions[mod.get_global_var("main")] = Function(
            fn.params, Let(v, fn.params[0], fn.body), fn.ret_type)
        return out

    with pytest.raises(PassVerificationError, match="after _BreakScope.*bound 2 times"):
        run_pass("_BreakScope", typed(), PassContext(verify=True))
    run_pass("_BreakScope", typed(), PassContext(verify=False))   # unchecked: no error


def test_verify_catches_an_ill_typed_result(scratch_passes):
    @register_pass("_BreakType", opt_level=0)
    def _break(mod: IRModule) -> IRModule:
        """Returns a parameter of a different type than declared."""
        out = mod.copy()
        fn = mod["main"]
        y = Var("y", builder.tensor((5,), "int32"))
        out.functions[mod.get_global_var("main")] = Function((*fn.params, y), y, fn.ret_type)
        return out

    with pytest.raises(PassVerificationError, match="ill-typed after _BreakType"):
        run_pass("_BreakType", typed(), PassContext(verify=True))


def test_suite_runs_with_verification():
    assert current().verify, "tests/conftest.py sets AOT_VERIFY_PASSES=1"


def test_sequential_skips_disabled_passes():
    mod = typed()
    with PassContext(disabled=["FuseOps"]):
        out = Sequential(["FuseOps"])(mod)
    assert out is mod


def test_disabling_a_pass_changes_the_generated_c(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    scale = rng.uniform(0.5, 2, (4, 1, 1)).astype("float32")
    from aot import builder as b
    x = b.var("x", b.tensor((1, 3, 8, 8)))
    conv = b.call("nn.conv2d", x, b.const(w), padding=[1, 1, 1, 1], channels=4,
                  kernel_size=[3, 3])
    mod = b.module(main=b.function([x], b.call("multiply", conv, b.const(scale))))
    folded = aot.compile(mod, tmp_path / "on", name="on")
    with PassContext(disabled=["FoldScaleAxis"]):
        plain = aot.compile(mod, tmp_path / "off", name="off")
    assert folded.metadata["constant_bytes"] < plain.metadata["constant_bytes"]
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(aot.load(folded)(data), aot.load(plain)(data), rtol=1e-5, atol=1e-5)


def test_cli_flags(tmp_path, capsys):
    src = tmp_path / "m.relay"
    src.write_text(SRC)
    dump = tmp_path / "ir"
    rc = cli_main(["compile", str(src), "-o", str(tmp_path / "out"), "--no-build",
                   "--dump-ir", str(dump), "--pass-timing", "--disable-pass", "FoldConstant",
                   "--opt-level", "2"])
    assert rc == 0
    names = sorted(p.name for p in dump.iterdir())
    assert "00_input.relay" in names and not any("FoldConstant" in n for n in names)
    assert any(n.endswith("_FuseOps.relay") for n in names)
    assert "FuseOps" in capsys.readouterr().err
    rc = cli_main(["compile", str(src), "-o", str(tmp_path / "o2"), "--disable-pass", "Nope"])
    assert rc == 1
    assert "unknown pass 'Nope'" in capsys.readouterr().err


def test_cli_lists_passes(capsys):
    assert cli_main(["passes", "--opt-level", "0"]) == 0
    out = capsys.readouterr().out
    assert "FoldConstant" in out
    assert ("DATAFLOW at opt level 0: SimplifyInference -> FakeQuantizationToInteger -> FuseOps"
            in out)


def test_cli_enable_pass_outside_the_pipelines_is_refused(tmp_path, capsys):
    src = tmp_path / "m.relay"
    src.write_text(SRC)
    rc = cli_main(["compile", str(src), "-o", str(tmp_path / "o"), "--no-build",
                   "--enable-pass", "ToANormalForm"])
    assert rc == 2
    assert "in no pipeline" in capsys.readouterr().err


CLOSURES = """
def @main(%x: Tensor[(3,), float32], %n: int32) -> Tensor[(3,), float32] {
  let %f = fn (%y: Tensor[(3,), float32]) -> Tensor[(3,), float32] { add(%y, %x) };
  let %g = if (%n > 0) { %f } else { fn (%y: Tensor[(3,), float32]) { multiply(%y, %x) } };
  %g(%x)
}
"""


def test_required_level_4_pass_runs_in_its_pipeline(tmp_path):
    """Defunctionalization (level 4) runs only when required; the program
    then has no closures left and computes the same."""
    src = tmp_path / "c.relay"
    src.write_text(CLOSURES)
    dump = tmp_path / "ir"
    assert cli_main(["compile", str(src), "-o", str(tmp_path / "plain"), "--no-build",
                     "--dump-ir", str(tmp_path / "ir0")]) == 0
    assert not any("Defunctionalization" in p.name for p in (tmp_path / "ir0").iterdir())
    assert cli_main(["compile", str(src), "-o", str(tmp_path / "defunc"), "--name", "d",
                     "--enable-pass", "Defunctionalization", "--dump-ir", str(dump)]) == 0
    after = [p for p in dump.iterdir() if p.name.endswith("_Defunctionalization.relay")]
    assert len(after) == 1 and "apply" in after[0].read_text()
    mod = aot.parse(CLOSURES)
    x = np.array([1.0, 2.0, 3.0], dtype="float32")
    for n in (1, -1):
        got = aot.load(tmp_path / "defunc")(x, np.array(n, dtype="int32"))
        np.testing.assert_array_equal(got, aot.interpret(mod, x, np.array(n, dtype="int32")))


def test_a_pass_sees_the_context_it_runs_under():
    """FuseOps reads the opt level: run with an explicit context (not
    entered with ``with``), level 0 must still mean one operator per kernel."""
    from aot.passes.fuse_ops import primitive_groups
    out = DATAFLOW(typed(), PassContext(opt_level=0))
    assert len(primitive_groups(out["main"])) == 3
    seen = []

    @register_pass("_Probe", opt_level=0)
    def _probe(mod: IRModule) -> IRModule:
        """Records the current context."""
        seen.append(current())
        return mod

    try:
        ctx = PassContext(opt_level=1)
        run_pass("_Probe", typed(), ctx)
        assert seen == [ctx]
    finally:
        manager.PASSES.unregister("_Probe")


def test_compile_at_opt_level_0_fuses_nothing(tmp_path):
    art = aot.compile(aot.parse(SRC), tmp_path / "o0", name="o0", opt_level=0, build=False)
    assert len(art.metadata["kernels"]) == 3
    art = aot.compile(aot.parse(SRC), tmp_path / "o3", name="o3", build=False)
    assert len(art.metadata["kernels"]) == 1


def test_compile_refuses_a_required_pass_in_no_pipeline(tmp_path):
    with PassContext(required=["ToANormalForm"]):
        with pytest.raises(DiagnosticError, match="ToANormalForm is required but in no pipeline"):
            aot.compile(aot.parse(SRC), tmp_path / "x", build=False)
