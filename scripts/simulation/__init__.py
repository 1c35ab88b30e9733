"""The scenario explorer of phi's concurrency (issue 30; docs/simulation.md).

``plan`` draws a scenario from a seed, ``world`` and ``actors`` run it under
:mod:`phi.concurrency.simulator` and check the run contract as it goes, ``checks`` holds the
invariants that judge collected facts, ``explore`` runs one seed end to end. ``scripts/simulate.py``
is the command line.
"""
