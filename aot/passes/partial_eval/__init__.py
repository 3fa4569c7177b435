"""PartialEvaluate: run at compile time what the known values allow.

Design note
-----------
An *online* partial evaluator over the typed IR, after Relay's
``PartialEvaluate`` (``src/relay/transforms/partial_eval.cc``).  It is the
reference interpreter run on *partially static* values
(:mod:`.static`): each expression evaluates to what is known of its value
at compile time, if anything (a tensor, a tuple, an ADT cell, a reference,
a closure), together with an atom of the *residual* program that computes
it at run time.  The residual program is written as it goes, in A-normal
form (:mod:`.residual`): every computation that cannot be done now becomes
one ``let`` binding, in evaluation order, so nothing is duplicated or
reordered.

Per construct (:mod:`.evaluator`):

* an operator whose arguments are all static tensors (or tuples of them)
  is evaluated by the interpreter's ``apply_op`` (the registry's NumPy
  reference, as FoldConstant does); an evaluation that fails on the data
  stays in the program, where it fails at run time; as in FoldConstant,
  a call without arguments (``zeros``) is not evaluated;
* a fused ``Primitive`` function is never unfolded nor rewritten (each
  copy gets fresh binders); called on static arguments it is evaluated as
  a whole;
* tuples, projections and constructor calls build static structures (and
  their residual bindings); a projection of a static tuple is its field;
* ``let`` binds the variable to the value's PStatic: uses of the variable
  see the static value;
* a function literal becomes a static closure over the PStatics of its
  free variables; its residual function (the body evaluated with dynamic
  parameters and an empty store) is bound at once in case it escapes;
* a call of a static closure (a literal, a global, a recursive ``let``) is
  *unfolded*: its body is evaluated in a new activation with the argument
  PStatics, inline into the caller's residual code -- when the
  termination rule below allows; otherwise it is a residual call of the
  closure's residual function (or global);
* ``if`` on a static condition takes its branch; ``match`` on a
  constructor (or tuple) known far enough takes the first clause that
  certainly matches; otherwise each branch is evaluated into a block of
  its own and the ``if``/``match`` is residualised;
* references: ``ref(v)`` makes a static cell whose contents the *store*
  records; reading a cell with known contents gives them; a write updates
  the store (and stays in the program).  The store forgets everything at
  an unknown effect: a write through an unknown reference, a residual call
  of a function value (it may write any cell it can reach).  Each branch
  of a residualised ``if``/``match`` starts from a copy of the store;
  afterwards only the entries no branch changed are kept.  A residual
  function body starts from an empty store.  A dynamic read of a static
  cell is remembered until the next write.
* A node with several parents (a graph binding) is evaluated once per
  activation, as the interpreter does; its value is reused while its
  residual binding is in scope (memo entries are dropped when their block
  closes).

Every global function is residualised with dynamic parameters; its type
parameters stay.  Inlined polymorphic code keeps type annotations (on the
parameters of residual functions) under the substitution of the call's
type arguments; an annotation that would still name a type variable the
residual function does not bind is dropped, and type inference, run on
the result, works the type out.  Residual ``let`` bindings and pattern
variables are annotated the same way with the type of the node they come
from: a residual ``ref(GradZero)`` (a higher-order gradient's adjoint
cell) whose reads and writes were all evaluated away has no other source
for its type argument.

Termination
-----------
Unfolding is the only source of non-termination (everything else walks
the program once), so it is bounded by three rules, checked at every call
of a static closure:

1. *Progress*, Relay's fuel: a function is identified by its Function
   node (copies of it share the fuel).  Along the chain of its unfoldings
   in progress (those that are still being evaluated, nested), we keep,
   per argument position, the minimum (creation time, integer value) of
   the arguments seen (a closure's captured values count as arguments
   after the real ones: closures made by one literal share its fuel, and
   ``compose(f, compose(f, g))`` must tell them apart).  A nested call unfolds only if some
   argument is strictly *older* than every one seen at its position (a part of a
   static structure is always created before the structure, so walking
   down a static list or a Peano number goes back in time), or is a
   static 0-d integer strictly *smaller* than every one seen (counting
   down ``n - 1``).  Both components are natural numbers that only
   decrease along a chain, so no chain is infinite.  The entry point of a
   function's own residualisation counts as an unfolding (its dynamic
   parameters are the newest values, so a recursive call with dynamic
   arguments is a residual call, never an unfolding): ``fact(n)`` with
   ``n`` dynamic unfolds once, then calls.
2. *Depth*: a chain is at most ``max_depth`` unfoldings of one function
   (the progress measure alone would unroll ``count_down(1000000)``).
3. *Budget*: at most ``max_unfold`` unfoldings per global function
   residualised (bounds the total work when unfoldings are not nested,
   e.g. tree recursion).

Exhausted fuel only means a call stays a call: the residual program is
still the program.  Residual function bodies are entered without the
progress check (each literal must have one residual body), which keeps
termination: a literal is entered only when the evaluation reaches it,
inside a body that is itself a root, a checked unfolding or an enclosing
literal.

Output and cleanup
------------------
The residual code is in let form; dead bindings, write-only references
and ``let %x = e; %x`` tails are removed by the pass itself
(:func:`.residual.clean`, dead-code-elimination semantics: no separate
DCE pass is needed).  Single-use bindings are *not* inlined (the graph
normal form pass does that).  The result is type-checked again.

Limits of this design (sound, conservative): the store forgets
everything at an unknown effect (no escape analysis); a residualised
``match`` binds its pattern variables to unknown values even when the
scrutinee is partly static; a node shared between a branch and the code
after it is evaluated again after the branch.

Placement: level 3, in the PROGRAM pipeline after Specialize (it needs
the monomorphic program: each residual global is type-checked at its one
instance) and followed, as in Relay's own use of the pass (PartialEvaluate,
InferType, DeadCodeElimination), by InferType, Inline, FoldConstant and
DeadCodeElimination.  It was level 4 until a sweep of random programs
through the pipeline showed no difference (``scripts/pe_sweep.py -n 5000
--seed 1``): 5,000 programs, each with dynamic arguments and with main's
tensors bound (10,000 pipeline runs, PartialEvaluate's output verified),
interpreted before and after, 250 of them also in C: no difference, no
time-out.  A program it reduces to plain dataflow (no closure, ADT,
reference or control flow left: examples/list_fold.relay) can go to the
dataflow backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics import DiagnosticError
from ...ir.module import IRModule
from ..manager import register_pass
from .evaluator import Evaluator, Limits
from .residual import clean

__all__ = ["PartialEvalOptions", "partial_evaluate"]


@dataclass(frozen=True)
class PartialEvalOptions:
    """Typed options of PartialEvaluate (see the termination rule)."""

    #: nested unfoldings of one function (at least 1)
    max_depth: int = 64
    #: unfoldings per global function residualised (0: inline nothing)
    max_unfold: int = 1000


def partial_evaluate(mod: IRModule, opts: PartialEvalOptions | None = None) -> IRModule:
    """Evaluate at compile time what static values allow: fold operators
    on constants, inline calls of known functions, take known branches,
    match known constructors, track references."""
    from ...ir.type_infer import infer_types
    opts = opts or PartialEvalOptions()
    for name, least in (("max_depth", 1), ("max_unfold", 0)):
        if getattr(opts, name) < least:
            raise DiagnosticError(f"option PartialEvaluate.{name} must be >= {least}, "
                                  f"not {getattr(opts, name)}")
    if not mod.is_typed:
        mod = infer_types(mod)
    evaluator = Evaluator(mod, Limits(opts.max_depth, opts.max_unfold))
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, clean(evaluator.residualise(func)))
    return infer_types(out)


register_pass("PartialEvaluate", opt_level=3, options=PartialEvalOptions)(partial_evaluate)
