"""CEL as the apiserver evaluates it: CRD validation rules (``x-kubernetes-validations``) and policies.

The expressions are parsed and evaluated by ``common-expression-language`` (compiled bindings of a CEL
implementation); this package adds what Kubernetes adds to CEL (its function libraries, the static checks
that reject a rule at CRD creation, the cost limit) and the apiserver's wording of every failure.
See docs/sim.md for why this library and not another.
"""
